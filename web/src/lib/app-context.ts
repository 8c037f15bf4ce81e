// The app's singletons: the read credentials, the API client and the
// live-event store, shared by every view. Kept in one module so views import
// them instead of threading them through props.
import { createAuthStore } from './api/auth';
import { createClient } from './api/client';
import { createLiveStore } from './stores/live';

export const auth = createAuthStore(typeof sessionStorage === 'undefined' ? null : sessionStorage);
export const client = createClient({
  token: () => auth.token(),
  onUnauthorized: (code) => auth.require(code === 'invalid_token' ? 'invalid_token' : 'unauthorized'),
});
export const live = createLiveStore();
