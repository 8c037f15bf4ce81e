// The app's singletons: the API client and the live-event store, shared by
// every view. Kept in one module so views import them instead of threading
// them through props.
import { createClient } from './api/client';
import { createLiveStore } from './stores/live';

export const client = createClient();
export const live = createLiveStore();
