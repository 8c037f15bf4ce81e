// A tiny history router: six routes, query strings as state. results-api
// serves index.html for unknown paths (SPA fallback), so deep links work.
import { readable } from 'svelte/store';

export type RouteName = 'overview' | 'images' | 'image' | 'changes' | 'vulnerability' | 'exceptions' | 'notfound';

export interface Route {
  name: RouteName;
  params: Record<string, string>;
  query: URLSearchParams;
  path: string;
}

const PATTERNS: [RouteName, RegExp, string[]][] = [
  ['overview', /^\/$/, []],
  ['images', /^\/images\/?$/, []],
  ['image', /^\/images\/(sha256:[0-9a-f]{64})\/?$/, ['digest']],
  ['changes', /^\/changes\/?$/, []],
  ['vulnerability', /^\/vulnerabilities\/([^/]{1,200})\/?$/, ['id']],
  ['exceptions', /^\/exceptions\/?$/, []],
];

export function match(pathname: string, search = ''): Route {
  const query = new URLSearchParams(search);
  for (const [name, re, keys] of PATTERNS) {
    const m = re.exec(pathname);
    if (!m) continue;
    const params: Record<string, string> = {};
    keys.forEach((k, i) => (params[k] = decodeURIComponent(m[i + 1])));
    return { name, params, query, path: pathname };
  }
  return { name: 'notfound', params: {}, query, path: pathname };
}

function current(): Route {
  return match(location.pathname, location.search);
}

let set: ((r: Route) => void) | null = null;

export const route = readable<Route>(typeof location === 'undefined' ? match('/') : current(), (s) => {
  set = s;
  const onPop = () => s(current());
  addEventListener('popstate', onPop);
  return () => {
    removeEventListener('popstate', onPop);
    set = null;
  };
});

export function navigate(href: string, opts: { replace?: boolean } = {}): void {
  const url = new URL(href, location.href);
  if (url.href === location.href) return;
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  set?.(current());
  if (!opts.replace) window.scrollTo(0, 0);
}

/** Turns same-origin <a href="/..."> clicks into client-side navigation. */
export function interceptLinks(root: HTMLElement): () => void {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  };
  root.addEventListener('click', onClick);
  return () => root.removeEventListener('click', onClick);
}
