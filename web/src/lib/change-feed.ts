// A list of findings changes as a view holds it: REST pages (newest first,
// keyset cursor) with changes from findings.changed frames merged in. The
// same change can arrive both ways (a frame, then a page fetched after it);
// it is kept once, by id, and the page's copy wins because it lists up to
// 200 findings per side where a frame lists 100.
import type { Change, ChangeList, FindingsChanged } from './api/types';

export interface Feed {
  /** Newest first: changedAt, then id, both descending (the API's order). */
  items: Change[];
  /** The cursor of the page after the oldest item; absent when it is the last. */
  nextCursor?: string;
  /** True once the first page arrived (distinguishes "loading" from "empty"). */
  loaded: boolean;
}

export function emptyFeed(): Feed {
  return { items: [], loaded: false };
}

/** A findings.changed frame's payload as a Change (the REST shape). */
export function changeFromFrame(d: FindingsChanged): Change {
  return {
    id: d.changeId,
    digest: d.digest,
    image: d.image,
    cause: d.cause,
    dbBuilt: d.dbBuilt ?? '',
    ...(d.dbSchema ? { dbSchema: d.dbSchema } : {}),
    changedAt: d.changedAt,
    baseline: d.baseline,
    newCounts: d.newCounts,
    resolvedCounts: d.resolvedCounts,
    kevAddedCount: d.kevAddedCount ?? 0,
    new: d.new ?? [],
    resolved: d.resolved ?? [],
    kevAdded: d.kevAdded ?? [],
    truncated: d.truncated ?? false,
  };
}

/** Sort order of the feed: negative when a is newer than b. */
export function newerFirst(a: Change, b: Change): number {
  const ta = Date.parse(a.changedAt);
  const tb = Date.parse(b.changedAt);
  if (ta !== tb) return tb - ta;
  return b.id - a.id;
}

/** The union of two lists by id, b's copy winning, in feed order. */
function union(a: Change[], b: Change[]): Change[] {
  const ids = new Set(b.map((c) => c.id));
  return a.filter((c) => !ids.has(c.id)).concat(b).sort(newerFirst);
}

/**
 * Merges a fresh first page (first load, or a refetch after a reconnect)
 * into the feed. When the feed's newest item is older than the page's oldest
 * and the page is not the last, changes between them are unknown (many were
 * missed): the page replaces the feed, and "load more" continues from it.
 */
export function mergeFirstPage(feed: Feed, page: ChangeList): Feed {
  const items = page.items;
  if (!feed.loaded || feed.items.length === 0 || items.length === 0) {
    return { items: union(feed.items, items), nextCursor: page.nextCursor, loaded: true };
  }
  if (page.nextCursor === undefined) return { items: union(feed.items, items), loaded: true };
  const oldestPage = items[items.length - 1];
  const newestFeed = feed.items[0];
  const oldestFeed = feed.items[feed.items.length - 1];
  if (newerFirst(newestFeed, oldestPage) > 0) return { items, nextCursor: page.nextCursor, loaded: true };
  // Overlapping: the result reaches as far back as the longer of the two.
  const cursor = newerFirst(oldestFeed, oldestPage) > 0 ? feed.nextCursor : page.nextCursor;
  return { items: union(feed.items, items), nextCursor: cursor, loaded: true };
}

/**
 * Appends the page fetched with `cursor`. A page whose cursor is no longer
 * the feed's (the feed was replaced while it was in flight) is dropped.
 */
export function appendPage(feed: Feed, page: ChangeList, cursor: string): Feed {
  if (feed.nextCursor !== cursor) return feed;
  return { items: union(feed.items, page.items), nextCursor: page.nextCursor, loaded: true };
}

/** Adds a live change unless the feed has it already (then the feed is returned as it is). */
export function addLive(feed: Feed, change: Change): Feed {
  if (feed.items.some((c) => c.id === change.id)) return feed;
  return { ...feed, items: union(feed.items, [change]) };
}

/** New critical and high findings of the non-baseline changes (a baseline's findings are not "new"). */
export function newSevere(items: Change[]): number {
  return items.reduce((n, c) => (c.baseline ? n : n + c.newCounts.critical + c.newCounts.high), 0);
}

export interface BoundedCount {
  count: number;
  /** More pages were left unread: the true count is at least `count`. */
  bounded: boolean;
}

/** Sums newSevere over the pages of a feed query, reading at most maxPages of them. */
export async function countNewSevere(
  fetchPage: (cursor: string | undefined) => Promise<ChangeList>,
  maxPages: number,
): Promise<BoundedCount> {
  let count = 0;
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = await fetchPage(cursor);
    count += newSevere(page.items);
    cursor = page.nextCursor;
    if (cursor === undefined) return { count, bounded: false };
  }
  return { count, bounded: true };
}

export function formatBounded(c: BoundedCount): string {
  return c.bounded ? `≥${c.count}` : String(c.count);
}
