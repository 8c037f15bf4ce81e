// Read credentials (results-api --read-auth=kubernetes): the bearer token
// pasted on the sign-in panel, kept in sessionStorage for the tab, and how it
// travels — an Authorization header on REST calls and, because browsers
// cannot set headers on a WebSocket, a Sec-WebSocket-Protocol entry. Behind
// an authenticating proxy nothing is stored: no call answers 401, so the
// panel never shows.
import { writable, type Readable } from 'svelte/store';
import type { Access } from './types';

/** The subprotocol results-api selects; offered first on every WebSocket. */
export const EVENTS_PROTOCOL = 'crowsnest.v1';
/** Kubernetes' form of a bearer token as a WebSocket subprotocol. */
export const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

const KEY = 'crowsnest.readToken';

/**
 * Why the sign-in panel shows: no credentials yet (unauthorized), the token
 * was refused or expired (invalid_token), or the live connection was closed
 * because the credentials stopped being valid (revoked, WebSocket 1008).
 */
export type SignInReason = 'unauthorized' | 'invalid_token' | 'revoked';

export interface AuthState {
  token: string;
  /** Set while the sign-in panel must show. */
  required?: SignInReason;
  /** Who the caller is and what it may read (GET /api/v1/access); absent until known. */
  access?: Access;
}

export interface AuthStore extends Readable<AuthState> {
  token(): string;
  signIn(token: string): void;
  signOut(): void;
  /** A call answered 401 (code unauthorized or invalid_token) or the WebSocket closed with 1008. */
  require(reason: SignInReason): void;
  setAccess(access: Access): void;
}

/** Storage is optional: a browser with storage disabled still signs in for the page's lifetime. */
export function createAuthStore(storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> | null): AuthStore {
  const read = () => {
    try {
      return storage?.getItem(KEY) ?? '';
    } catch {
      return '';
    }
  };
  const write = (token: string) => {
    try {
      if (token) storage?.setItem(KEY, token);
      else storage?.removeItem(KEY);
    } catch {
      // Storage full or disabled: the token lives in memory only.
    }
  };
  const store = writable<AuthState>({ token: read() });
  let current = '';
  store.subscribe((s) => (current = s.token));

  return {
    subscribe: store.subscribe,
    token: () => current,
    signIn(token) {
      const t = token.trim();
      write(t);
      store.set({ token: t });
    },
    signOut() {
      write('');
      store.set({ token: '', required: 'unauthorized' });
    },
    require(reason) {
      store.update((s) => (s.required ? s : { ...s, required: reason, access: undefined }));
    },
    setAccess(access) {
      store.update((s) => ({ ...s, access }));
    },
  };
}

/** The Authorization header for token, or none. */
export function authHeaders(token: string): Record<string, string> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** base64url of the UTF-8 bytes of s, without padding. */
export function base64url(s: string): string {
  let bin = '';
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The subprotocols the events WebSocket offers: crowsnest.v1, plus the token when there is one. */
export function eventsProtocols(token: string): string[] {
  return token ? [EVENTS_PROTOCOL, BEARER_PROTOCOL_PREFIX + base64url(token)] : [EVENTS_PROTOCOL];
}

/** The sign-in panel's explanation for reason. */
export function signInMessage(reason: SignInReason | undefined): string {
  switch (reason) {
    case 'invalid_token':
      return 'results-api refused that token: it is invalid, expired or revoked. Paste a new one.';
    case 'revoked':
      return 'Your credentials are no longer valid (the token expired or was revoked). Paste a new token.';
    default:
      return 'results-api needs a token to show reports.';
  }
}
