import { get } from 'svelte/store';
import { describe, expect, it } from 'vitest';
import { authHeaders, base64url, BEARER_PROTOCOL_PREFIX, createAuthStore, eventsProtocols, signInMessage } from './auth';

/** A Storage stand-in with the three methods the store uses (vitest runs in node, without sessionStorage). */
function memory(): Storage {
  const m = new Map<string, string>();
  return {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
  } as Storage;
}

describe('read token store', () => {
  it('keeps the token in storage for the session and forgets it on sign-out', () => {
    const storage = memory();
    const a = createAuthStore(storage);
    expect(a.token()).toBe('');
    a.require('unauthorized');
    expect(get(a).required).toBe('unauthorized');
    a.signIn('  tok-1 \n');
    expect(a.token()).toBe('tok-1');
    expect(get(a).required).toBeUndefined();
    expect(storage.getItem('crowsnest.readToken')).toBe('tok-1');
    // A new page load in the same tab finds it again.
    expect(createAuthStore(storage).token()).toBe('tok-1');
    a.setAccess({ user: 'system:serviceaccount:a:viewer', cluster: false, namespaces: ['a'] });
    expect(get(a).access?.user).toBe('system:serviceaccount:a:viewer');
    a.signOut();
    expect(a.token()).toBe('');
    expect(get(a)).toEqual({ token: '', required: 'unauthorized' });
    expect(storage.getItem('crowsnest.readToken')).toBeNull();
  });

  it('keeps the first reason when several calls fail at once, and forgets who was signed in', () => {
    const a = createAuthStore(memory());
    a.signIn('expired');
    a.setAccess({ user: 'u', cluster: true, namespaces: [] });
    a.require('invalid_token');
    a.require('unauthorized');
    expect(get(a)).toEqual({ token: 'expired', required: 'invalid_token', access: undefined });
  });

  it('works without storage (disabled or throwing)', () => {
    const broken = { getItem: () => { throw new Error('denied'); }, setItem: () => { throw new Error('full'); }, removeItem: () => {} };
    const a = createAuthStore(broken);
    a.signIn('t');
    expect(a.token()).toBe('t');
    expect(createAuthStore(null).token()).toBe('');
  });

  it('explains why the panel shows', () => {
    expect(signInMessage('invalid_token')).toMatch(/refused.*expired/);
    expect(signInMessage('revoked')).toMatch(/no longer valid/);
    expect(signInMessage(undefined)).toMatch(/needs a token/);
  });
});

describe('credentials on the wire', () => {
  it('sends a bearer header only with a token', () => {
    expect(authHeaders('abc')).toEqual({ Authorization: 'Bearer abc' });
    expect(authHeaders('')).toEqual({});
  });

  it('encodes the token as unpadded base64url, as Kubernetes does', () => {
    expect(base64url('')).toBe('');
    expect(base64url('f')).toBe('Zg');
    expect(base64url('fo')).toBe('Zm8');
    expect(base64url('foo')).toBe('Zm9v');
    // Non-ASCII: the UTF-8 bytes are encoded.
    expect(base64url('\u00fb\u00ff')).toBe(Buffer.from('\u00fb\u00ff', 'utf8').toString('base64url'));
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln';
    expect(base64url(jwt)).toBe(Buffer.from(jwt).toString('base64url'));
    expect(base64url('>>>???')).toBe('Pj4-Pz8_');
  });

  it('offers crowsnest.v1 first and the token as a second subprotocol', () => {
    expect(eventsProtocols('')).toEqual(['crowsnest.v1']);
    const [first, second] = eventsProtocols('my.token');
    expect(first).toBe('crowsnest.v1');
    expect(second).toBe(BEARER_PROTOCOL_PREFIX + Buffer.from('my.token').toString('base64url'));
    expect(second).not.toMatch(/[=+/]/);
  });
});
