import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';

/** An object of a rendered kustomization, as the tests read it. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

/**
 * `kubectl kustomize <folder>`, as the contract says (no cluster needed; npm test installs
 * kubectl): its objects, or a throw with kustomize's own message.
 */
export function renderFolder(folder: string): Manifest[] {
  const text = execFileSync('kubectl', ['kustomize', folder], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseAllDocuments(text).map((doc) => doc.toJSON() as Manifest);
}
