import express, { type ErrorRequestHandler } from 'express';
import { ApiError } from './api-error.js';
import { controlRoutes } from './control-routes.js';
import { providerRoutes } from './provider-routes.js';
import type { SandboxApiDeps } from './sandbox-api-deps.js';

/** The provider's API (docs/provider.md) as the sandbox plays it, and the sandbox's control endpoints. */
export function createSandboxApi(deps: SandboxApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json({ limit: '16mb' }));
  app.use(providerRoutes(deps));
  app.use(controlRoutes(deps));
  app.use((_req, res) => {
    res.status(404).json({ detail: 'not found' });
  });
  const errors: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    if (error instanceof ApiError) {
      res.set(error.headers).status(error.status).json({ detail: error.message });
      return;
    }
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      res.status(status).json({ detail: error instanceof Error ? error.message : 'bad request' });
      return;
    }
    deps.logger.error({ err: error }, 'sandbox API error');
    res.status(500).json({ detail: 'internal error' });
  };
  app.use(errors);
  return app;
}
