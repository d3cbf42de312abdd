import { createServer } from 'node:net';

/** Whether 127.0.0.1:port cannot be bound now because something listens there. */
export async function portIsTaken(port: number): Promise<boolean> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  } catch (error: unknown) {
    if (error instanceof Error && 'code' in error && error.code === 'EADDRINUSE') return true;
    throw error;
  }
  await new Promise((resolve) => server.close(resolve));
  return false;
}
