/**
 * A design: its kernel, parameters and edits, the verdict saved with it (design files), and an
 * "Open in a notebook" button. The button only announces itself (a bubbling `tslab-open-design` event):
 * the JupyterLab plugin, which owns the file system, answers it.
 */

import { h } from './dom';
import { captureArg, pyKwargs, pyRepr } from './python';
import type { DesignPayload } from './types';
import { VerdictView, createVerdictView } from './verdict';

export const OPEN_DESIGN_EVENT = 'tslab-open-design';

export interface OpenDesignDetail {
  design: DesignPayload;
}

function table(entries: [string, unknown][]): HTMLElement {
  return h('table', { class: 'tslab-kv' }, ...entries.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, h('code', {}, pyRepr(v))))));
}

/** The edits on top of the kernel's own design, or null when there are none. */
function overrides(d: DesignPayload): HTMLElement | null {
  const parts: Node[] = [];
  for (const [res, fields] of Object.entries(d.pipelines ?? {})) {
    parts.push(h('li', {}, 'pipeline ', h('code', {}, res), ': ', h('code', {}, pyKwargs(fields))));
  }
  for (const [task, steps] of Object.entries(d.schedules ?? {})) {
    parts.push(h('li', {}, 'schedule ', h('code', {}, task), `: ${steps.length} steps`));
  }
  if (d.alias_groups !== null && d.alias_groups !== undefined) {
    parts.push(h('li', {}, 'alias groups: ', h('code', {}, pyRepr(d.alias_groups))));
  }
  for (const [knob, value] of Object.entries(d.knobs ?? {})) {
    parts.push(h('li', {}, 'knob ', h('code', {}, knob), ' = ', h('code', {}, pyRepr(value))));
  }
  return parts.length ? h('ul', { class: 'tslab-overrides' }, ...parts) : null;
}

/** Where a captured design comes from: the kernel file and host function (or the callable), and the arguments it
 * was traced with, as the Python that makes them. */
function capturedFrom(src: Record<string, unknown>): HTMLElement {
  const where = src.file ? `${src.file}::${src.function}` : String(src.callable ?? '?');
  const args = [
    ...(Array.isArray(src.args) ? src.args.map(captureArg) : []),
    ...(src.kwargs && typeof src.kwargs === 'object' ? [pyKwargs(src.kwargs as Record<string, unknown>, captureArg)].filter(Boolean) : [])
  ].join(', ');
  return h('div', { class: 'tslab-source' }, 'captured from ', h('code', {}, where), args ? h('span', {}, ' with ', h('code', {}, `(${args})`)) : '', src.arch ? ` for ${src.arch}` : '');
}

export function createDesignView(d: DesignPayload): { node: HTMLElement; verdict: VerdictView | null; dispose(): void } {
  const verdict = d.verdict ? createVerdictView(d.verdict) : null;
  const open = h('button', { class: 'tslab-open-notebook jp-mod-styled jp-mod-accept' }, 'Open in a notebook');
  open.addEventListener('click', () => {
    const detail: OpenDesignDetail = { design: d };
    open.dispatchEvent(new CustomEvent(OPEN_DESIGN_EVENT, { bubbles: true, detail }));
  });
  const source = d.source ? capturedFrom(d.source) : null;
  const node = h(
    'div',
    { class: 'tslab-design' },
    h('div', { class: 'tslab-design-head' }, h('b', {}, 'design '), h('code', { class: 'tslab-kernel' }, d.kernel), ' ', open),
    source,
    Object.keys(d.params ?? {}).length ? table(Object.entries(d.params)) : h('i', {}, 'no parameters'),
    overrides(d) ?? h('div', { class: 'tslab-no-overrides' }, h('i', {}, 'no edits on top of the kernel\u2019s own design')),
    verdict ? h('div', { class: 'tslab-saved-verdict' }, h('b', {}, 'last saved verdict'), verdict.node) : null
  );
  return { node, verdict, dispose: () => verdict?.dispose() };
}
