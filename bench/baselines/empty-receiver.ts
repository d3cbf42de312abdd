/**
 * Baseline (b), "empty": an Express 5 app with the receiver's middleware (the same
 * applyCommonMiddleware: helmet, the one-line request log, no x-powered-by, no ETag) whose route reads the raw body and answers 202 without
 * verifying or storing anything. The ceiling for this stack on this machine.
 */
import express from 'express';
import getRawBody from 'raw-body';
import { applyCommonMiddleware } from '../../src/receiver/common-middleware.js';
import { createLogger } from '../../src/telemetry/logger.js';

const app = express();
applyCommonMiddleware(app, createLogger(process.env.LOG_LEVEL ?? 'info'));
app.post('/webhooks', async (req, res) => {
  await getRawBody(req, { limit: 1_048_576 });
  res.status(202).json({ received: true, duplicate: false });
});
app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('listening'));
