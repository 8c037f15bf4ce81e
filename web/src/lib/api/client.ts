// The one typed client for results-api's REST surface (/api/v1). Every view
// talks to the server through it; it owns URLs, query strings, JSON decoding
// and the error shape.
import { authHeaders } from './auth';
import type {
  Access,
  ApiErrorBody,
  AuditQuery,
  ChangeList,
  ChangePageQuery,
  ChangeQuery,
  ExceptionAudit,
  FindingQuery,
  ReportDetail,
  ReportList,
  ReportQuery,
  ScanList,
  ScanState,
  Stats,
  VulnDBStatus,
  Vulnerability,
  VulnerabilityQuery,
} from './types';

/** A non-2xx answer (code/message from the JSON error body) or a network failure (status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }

  get notFound(): boolean {
    return this.status === 404;
  }
}

export interface ClientOptions {
  /** Origin of results-api; empty means same origin (how the UI is served). */
  baseUrl?: string;
  fetch?: typeof fetch;
  /** Per-request timeout. */
  timeoutMs?: number;
  /** The read token to send as Authorization: Bearer ("" sends none). */
  token?: () => string;
  /** Called with the error code (unauthorized, invalid_token) when a call answers 401. */
  onUnauthorized?: (code: string) => void;
}

export type Client = ReturnType<typeof createClient>;

const PREFIX = '/api/v1';

export function createClient(options: ClientOptions = {}) {
  const base = (options.baseUrl ?? '').replace(/\/+$/, '');
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 15_000;
  const token = options.token ?? (() => '');

  function url(path: string, query?: Record<string, string | number | boolean | undefined>): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== '' && v !== false) qs.set(k, String(v));
    }
    const s = qs.toString();
    return `${base}${PREFIX}${path}${s ? `?${s}` : ''}`;
  }

  /** readAuth false: a write with its own token; a 401 then is about that token, not the session's. */
  async function request(input: string, init: RequestInit = {}, readAuth = true): Promise<Response> {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), timeoutMs);
    const outer = init.signal;
    outer?.addEventListener('abort', () => ctl.abort(), { once: true });
    let res: Response;
    try {
      const headers = { ...(readAuth ? authHeaders(token()) : {}), ...(init.headers as Record<string, string> | undefined) };
      res = await doFetch(input, { ...init, headers, signal: ctl.signal });
    } catch (err) {
      if (outer?.aborted) throw err;
      const why = ctl.signal.aborted ? 'request timed out' : 'network error';
      throw new ApiError(0, 'network', `${why}: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok) {
      const err = await toError(res);
      if (err.status === 401 && readAuth) options.onUnauthorized?.(err.code);
      throw err;
    }
    return res;
  }

  async function json<T>(input: string, init?: RequestInit): Promise<T> {
    const res = await request(input, { ...init, headers: { Accept: 'application/json', ...init?.headers } });
    return (await res.json()) as T;
  }

  return {
    listReports(query: ReportQuery = {}, signal?: AbortSignal): Promise<ReportList> {
      return json(url('/reports', query), { signal });
    },
    /** A report's summary with one page of its findings; findingsNextCursor is absent on the last page. */
    getReport(digest: string, query: FindingQuery = {}, signal?: AbortSignal): Promise<ReportDetail> {
      return json(url(`/reports/${seg(digest)}`, query), { signal });
    },
    async deleteReport(digest: string, token: string): Promise<void> {
      await request(url(`/reports/${seg(digest)}`), {
        method: 'DELETE',
        headers: authHeaders(token),
      }, false);
    },
    bomUrl(digest: string): string {
      return url(`/reports/${seg(digest)}/bom`);
    },
    /** The raw CycloneDX BOM, fetched with the read token (a plain link cannot send it). */
    async getBom(digest: string): Promise<Blob> {
      return (await request(url(`/reports/${seg(digest)}/bom`))).blob();
    },
    /** Who the caller is and which namespaces it may read. */
    getAccess(signal?: AbortSignal): Promise<Access> {
      return json(url('/access'), { signal });
    },
    getVulnerability(id: string, query: VulnerabilityQuery = {}, signal?: AbortSignal): Promise<Vulnerability> {
      return json(url(`/vulnerabilities/${seg(id)}`, query), { signal });
    },
    vexUrl(digest: string, namespace?: string): string {
      return url(`/reports/${seg(digest)}/vex`, { namespace });
    },
    /** The OpenVEX document of the decisions about an image in the view, fetched with the read token. */
    async getVex(digest: string, namespace?: string): Promise<Blob> {
      return (await request(url(`/reports/${seg(digest)}/vex`, { namespace }))).blob();
    },
    /** Every exception of the caller's view with its audit state; 404 exceptions_off without --exceptions. */
    getExceptionAudit(query: AuditQuery = {}, signal?: AbortSignal): Promise<ExceptionAudit> {
      return json(url('/exceptions/audit', query), { signal });
    },
    listScans(query: { status?: ScanState; limit?: number } = {}, signal?: AbortSignal): Promise<ScanList> {
      return json(url('/scans', query), { signal });
    },
    getStats(signal?: AbortSignal): Promise<Stats> {
      return json(url('/stats'), { signal });
    },
    /** The vulnerability DB the matcher serves and the readable reports per DB build. */
    getVulnDB(signal?: AbortSignal): Promise<VulnDBStatus> {
      return json(url('/vulndb'), { signal });
    },
    /** The fleet's findings changes, newest first; nextCursor is absent on the last page. */
    listChanges(query: ChangeQuery = {}, signal?: AbortSignal): Promise<ChangeList> {
      return json(url('/changes', query), { signal });
    },
    /** One digest's change history, newest first. */
    listReportChanges(digest: string, query: ChangePageQuery = {}, signal?: AbortSignal): Promise<ChangeList> {
      return json(url(`/reports/${seg(digest)}/changes`, query), { signal });
    },
  };
}

/** The WebSocket URL of /api/v1/events for a page served from `location`. */
export function eventsUrl(location: { protocol: string; host: string }, baseUrl = ''): string {
  if (baseUrl) return baseUrl.replace(/^http/, 'ws').replace(/\/+$/, '') + `${PREFIX}/events`;
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${PREFIX}/events`;
}

/**
 * Escapes one path segment. ':' is legal in a segment (RFC 3986 pchar) and is
 * kept, because servers match "sha256:<hex>" against the raw path.
 */
function seg(s: string): string {
  return encodeURIComponent(s).replace(/%3A/gi, ':');
}

async function toError(res: Response): Promise<ApiError> {
  let code = `http_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const body = (await res.json()) as Partial<ApiErrorBody>;
    if (body.error?.code) code = body.error.code;
    if (body.error?.message) message = body.error.message;
  } catch {
    // Not JSON (a proxy's error page): keep the status line.
  }
  return new ApiError(res.status, code, message);
}
