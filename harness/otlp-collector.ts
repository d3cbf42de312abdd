import { createServer, type Server } from 'node:http';

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  /** Nanoseconds since the epoch, as decimal strings (OTLP/JSON's encoding of 64-bit integers). */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
}
export interface ExportedSpan extends OtlpSpan {
  role: string;
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

/** A local OTLP/HTTP collector: keeps every span it is sent, with the sender's role. */
export async function startCollector() {
  const spans: ExportedSpan[] = [];
  const contentTypes = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      contentTypes.add(`${req.method ?? ''} ${req.url ?? ''} ${req.headers['content-type'] ?? ''}`);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as OtlpExport;
      for (const { resource, scopeSpans } of body.resourceSpans) {
        const role =
          resource.attributes.find((a) => a.key === 'audio_webhooks.role')?.value.stringValue ?? '';
        for (const scope of scopeSpans)
          for (const span of scope.spans) spans.push({ ...span, role });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    spans,
    contentTypes,
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  };
}
