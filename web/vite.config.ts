/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// `npm run dev` proxies the REST API and the WebSocket to a running results-api.
const apiTarget = process.env.CROWSNEST_API_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [svelte()],
  server: {
    proxy: {
      '/api': {
        target: apiTarget,
        changeOrigin: true,
        ws: true,
        // results-api accepts WebSockets from its own origin only; present the
        // proxied upgrade as coming from there.
        configure: (proxy) => {
          proxy.on('proxyReqWs', (req) => req.setHeader('origin', apiTarget));
        },
      },
    },
  },
  build: {
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    testTimeout: 10_000,
  },
});
