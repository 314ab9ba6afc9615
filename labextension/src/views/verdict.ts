/** A verdict: the badge, errors with their hints, the memory map, the schedule swimlane and the replay player. */

import { FAULT_COLOUR, SAFE_COLOUR, h, num } from './dom';
import { createLayoutMap } from './layout';
import { PlayerView, createPlayer } from './player';
import { createSwimlane } from './swimlane';
import type { VerdictPayload } from './types';

export function badgeColour(status: string): string {
  return status === 'SAFE' ? SAFE_COLOUR : status === 'NOT PROVEN' ? '#9a6700' : FAULT_COLOUR;
}

export function createBadge(v: VerdictPayload): HTMLElement {
  const c = v.checker;
  const limit = c.hit_state_limit ? ` (state limit ${num(c.max_states ?? 0)} hit)` : '';
  return h(
    'div',
    { class: 'tslab-badge-line' },
    h('span', { class: 'tslab-badge', style: `background:${badgeColour(v.status)}` }, v.status),
    ' ',
    h('code', {}, v.kernel),
    c.verdict !== 'not-run' ? h('span', { class: 'tslab-checker' }, ` checker: ${c.verdict}, ${num(c.states_explored)} states, ${c.runs} run(s)${limit}`) : null
  );
}

export function createErrors(v: VerdictPayload): HTMLElement | null {
  if (!v.errors.length && !v.warnings?.length) {
    return null;
  }
  return h(
    'ul',
    { class: 'tslab-errors' },
    ...v.errors.map(e =>
      h('li', {}, h('b', {}, e.kind), ' at ', h('span', { class: 'tslab-where' }, e.where), `: ${e.message}`, e.hint ? h('div', { class: 'tslab-hint' }, `hint: ${e.hint}`) : null)
    ),
    ...(v.warnings ?? []).map(w => h('li', { class: 'tslab-warning' }, w))
  );
}

export interface VerdictView {
  node: HTMLElement;
  player: PlayerView | null;
  dispose(): void;
}

export function createVerdictView(v: VerdictPayload): VerdictView {
  const player = v.trace ? createPlayer(v.trace) : null;
  const section = (title: string, body: Node | null) => (body ? h('details', { open: '', class: 'tslab-section' }, h('summary', {}, title), body) : null);
  const node = h(
    'div',
    { class: 'tslab-verdict' },
    createBadge(v),
    createErrors(v),
    section('memory', createLayoutMap(v.layout, v.memory)),
    section('schedule', createSwimlane(v.schedule)),
    section(v.trace && v.trace.fault.kind !== 'complete' ? 'counterexample' : 'a trace', player ? player.node : null)
  );
  return { node, player, dispose: () => player?.dispose() };
}
