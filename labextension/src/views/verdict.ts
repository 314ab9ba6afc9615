/** A verdict: the badge, errors with their hints, the memory map, the schedule swimlane and the replay player. */

import { FAULT_COLOUR, SAFE_COLOUR, h, num } from './dom';
import { createFittedLayoutMap } from './layout';
import { PlayerView, createPlayer } from './player';
import { createFlow } from './flow';
import { createSwimlane } from './swimlane';
import type { VerdictPayload } from './types';

export function badgeColour(status: string): string {
  return status === 'SAFE' ? SAFE_COLOUR : status === 'NOT PROVEN' ? '#9a6700' : FAULT_COLOUR;
}

/** "105 states (reduced search; TS's BFS: 2,795)": the state count and the search it comes from. */
export function statesText(c: VerdictPayload['checker']): string {
  if (c.prover !== 'reduced') {
    return `${num(c.states_explored)} states`;
  }
  const ts = c.ts_states === undefined || c.ts_states === null ? '' : `; TS's BFS: ${num(c.ts_states)}`;
  return `${num(c.states_explored)} states (reduced search${ts})`;
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
    c.verdict !== 'not-run' ? h('span', { class: 'tslab-checker' }, ` checker: ${c.verdict}, ${statesText(c)}, ${c.runs} run(s)${limit}`) : null
  );
}

/** The trip counts checked in place of TS's one-trip assumption, and what that proves. */
export function createTrips(v: VerdictPayload): HTMLElement | null {
  const t = v.trips;
  if (!t) {
    return null;
  }
  const outcome = t.failed_at === null ? 'proven for these n only, not for every n' : `fails at n=${t.failed_at}`;
  return h('div', { class: 'tslab-trips' }, `trip counts: ${t.text ?? `n = ${t.n.join(', ')}`}: ${outcome}`);
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
  const memory = createFittedLayoutMap(v.layout, v.memory);
  const section = (title: string, body: Node | null) => (body ? h('details', { open: '', class: 'tslab-section' }, h('summary', {}, title), body) : null);
  const node = h(
    'div',
    { class: 'tslab-verdict' },
    createBadge(v),
    createTrips(v),
    createErrors(v),
    v.rings && Object.keys(v.rings).length ? section('flow', createFlow(v.schedule, v.rings, { tasks: v.tasks })) : null,
    section('memory', memory.node),
    section('schedule', createSwimlane(v.schedule, { tasks: v.tasks })),
    section(v.trace && v.trace.fault.kind !== 'complete' ? 'counterexample' : 'a trace', player ? player.node : null)
  );
  return {
    node,
    player,
    dispose: () => {
      memory.dispose();
      player?.dispose();
    }
  };
}
