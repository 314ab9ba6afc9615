import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

export const ROOT = join(__dirname, '..', '..');

/** A recorded payload from `test/fixtures/` (written by `tests/test_labextension_data.py`). */
export function fixture<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf8'));
}

/** What a notebook output gives a renderer: the payload and the plain-text fallback. */
export function mimeModel(mimeType: string, payload: unknown, text = 'plain fallback'): IRenderMime.IMimeModel {
  return { trusted: true, data: { [mimeType]: payload as any, 'text/plain': text }, metadata: {}, setData: () => undefined };
}

export function key(node: HTMLElement, name: string): void {
  node.dispatchEvent(new KeyboardEvent('keydown', { key: name, bubbles: true }));
}
