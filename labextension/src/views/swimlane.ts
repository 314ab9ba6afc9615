/**
 * TS's schedule table as a swimlane: one lane per task (with its warps), head | loop | tail as columns aligned
 * across every lane, each step a block on its lane's one row with the pipeline item it refers to ("k", "k-1",
 * "#0", "n"). Hovering a wait marks the commits that release it (an acquire: the releases that free its slot);
 * given `onMove`, blocks are dragged or moved with Alt+Left/Right to reorder a task's steps.
 */

import { breakable, h } from './dom';
import type { ScheduleRow, TaskRow } from './types';

export const STAGE_FILLS: Record<string, string> = {
  ProducerAcquire: '#ddf4ff',
  ProducerTryAcquire: '#ddf4ff',
  ProducerCommit: '#b6e3ff',
  ConsumerWait: '#dafbe1',
  ConsumerTryWait: '#dafbe1',
  ConsumerRelease: '#aceebb'
};
export const WORK_FILL = '#f6f8fa';
export const SECTIONS = ['head', 'loop', 'tail'] as const;
export type Section = (typeof SECTIONS)[number];
const ORDER: Record<string, number> = { head: 0, loop: 1, tail: 2 };

/** The short verb a block shows for each TS stage (work steps show their label instead). */
export const VERBS: Record<string, string> = {
  ProducerAcquire: 'acquire',
  ProducerTryAcquire: 'try acquire',
  ProducerCommit: 'commit',
  ConsumerWait: 'wait',
  ConsumerTryWait: 'try wait',
  ConsumerRelease: 'release',
  ProducerWork: 'work',
  ConsumerWork: 'work'
};

/** Which of a pipeline's four counters a stage advances (the try forms count with their blocking forms). */
const COUNTER: Record<string, string> = {
  ProducerAcquire: 'acquire',
  ProducerTryAcquire: 'acquire',
  ProducerCommit: 'commit',
  ConsumerWait: 'wait',
  ConsumerTryWait: 'wait',
  ConsumerRelease: 'release'
};

/** What each pipeline step waits on in another task: a wait on that resource's commits, an acquire on its releases. */
const DEPENDS_ON: Record<string, string> = { wait: 'commit', acquire: 'release', commit: 'wait', release: 'acquire' };

const PAIRING: Record<string, string> = {
  wait: 'released by the commits of',
  acquire: 'its slot is freed by the releases of',
  commit: 'lets the waits go on in',
  release: 'frees a slot for the acquires of'
};

const EVERY = /^every\((\d+)(?:, start=(\d+))?\)$/;
const WHEN = /^when_(true|false)\((.+)\)$/;

/** When a guarded step runs, in words: "on trips 1, 3, 5, ...", "when ring.read.item is true (TS checks both)". */
export function guardText(guard: string): string {
  if (guard === 'FirstIter') {
    return 'on the first trip only';
  }
  if (guard === 'LastIter') {
    return 'on the last trip only';
  }
  const every = EVERY.exec(guard);
  if (every) {
    const [period, start] = [Number(every[1]), Number(every[2] ?? 0)];
    return period === 1 && start === 0 ? 'on every trip' : `on trips ${[0, 1, 2].map(i => start + i * period).join(', ')}, ...`;
  }
  const when = WHEN.exec(guard);
  if (when) {
    return `when ${when[2]} is ${when[1]} (a runtime value: TS checks both)`;
  }
  return `when ${guard}`;
}

/** `{task: steps}` in head, loop, tail order (tasks in the table's order). */
export function swimlaneRows(schedule: ScheduleRow[]): Map<string, ScheduleRow[]> {
  const lanes = new Map<string, ScheduleRow[]>();
  for (const row of schedule) {
    lanes.set(row.task, [...(lanes.get(row.task) ?? []), row]);
  }
  for (const steps of lanes.values()) {
    steps.sort((a, b) => ORDER[a.section] - ORDER[b.section] || a.index - b.index);
  }
  return lanes;
}

function term(coefficient: number, name: string, offset: number): string {
  const variable = coefficient === 0 ? '' : coefficient === 1 ? name : `${coefficient}${name}`;
  if (!variable) {
    return `#${offset}`;
  }
  return offset === 0 ? variable : `${variable}${offset > 0 ? '+' : '-'}${Math.abs(offset)}`;
}

/**
 * The pipeline item each step of one task refers to, by row: the n-th acquire, commit, wait or release of its
 * resource since the kernel began, counted over the head, `k` trips of the loop and, for the tail, all `n` trips.
 * Head steps get absolute items ("#0"), loop steps "k", "k-1", "2k+1", tail steps "n", "n-1"; work steps none.
 * A counter with a guarded loop step does not advance by the same count on every trip: its loop and tail steps
 * get no item.
 */
export function stageItems(steps: ScheduleRow[]): Map<ScheduleRow, string> {
  const head = new Map<string, number>();
  const perTrip = new Map<string, number>();
  const guarded = new Set<string>();
  const key = (row: ScheduleRow) => `${row.resource}\u0000${COUNTER[row.stage]}`;
  for (const row of steps) {
    if (!COUNTER[row.stage]) {
      continue;
    }
    const counts = row.section === 'head' ? head : row.section === 'loop' ? perTrip : null;
    counts?.set(key(row), (counts.get(key(row)) ?? 0) + 1);
    if (row.section === 'loop' && row.guard !== 'Always') {
      guarded.add(key(row));
    }
  }
  const seen = new Map<string, number>();
  const items = new Map<ScheduleRow, string>();
  for (const row of steps) {
    if (!COUNTER[row.stage] || (row.section !== 'head' && guarded.has(key(row)))) {
      continue;
    }
    const k = `${row.section}\u0000${key(row)}`;
    const before = seen.get(k) ?? 0;
    seen.set(k, before + 1);
    const inHead = row.section === 'head' ? 0 : (head.get(key(row)) ?? 0);
    const stride = row.section === 'head' ? 0 : (perTrip.get(key(row)) ?? 0);
    items.set(row, term(stride, row.section === 'tail' ? 'n' : 'k', inHead + before));
  }
  return items;
}

export interface MoveRequest {
  task: string;
  /** The step's index in the task's whole list (head, then loop, then tail). */
  index: number;
  section: Section;
  /** The position inside `section` once the step has been taken out. */
  to_index: number;
  /** What the step is, so that a host can refuse a move computed on an earlier schedule. */
  resource: string;
  stage: string;
  label: string | null;
}

export interface SwimlaneOptions {
  /** The tasks' warps and loops (`Verdict.task_rows()`); lanes without one show the task's name only. */
  tasks?: TaskRow[];
  /** Reorder a task's steps (live widgets); without it the blocks are not draggable. */
  onMove?: (move: MoveRequest) => void;
}

function laneTitle(task: string, info: TaskRow | undefined): HTMLElement {
  const warps = info ? (info.warps[0] === info.warps[1] ? `warp ${info.warps[0]}` : `warps ${info.warps[0]}-${info.warps[1]}`) : '';
  const trips = info?.trips !== null && info?.trips !== undefined ? `loop \u00d7${info.trips}` : '';
  const detail = [warps, trips, info?.persistent ? 'persistent' : ''].filter(Boolean).join(' \u00b7 ');
  return h('div', { class: 'tslab-lane-title', title: detail ? `${task}: ${detail}` : task }, h('b', {}, task), detail ? h('span', {}, detail) : null);
}

function blockTitle(row: ScheduleRow, item: string | undefined, task: string): string {
  const what = row.stage.endsWith('Work') ? `${row.stage}(${row.label ?? ''})` : row.stage;
  const guard = row.guard !== 'Always' ? `, only ${guardText(row.guard)}: ${row.guard}` : '';
  const of = item ? ` on item ${item}` : '';
  return `${task} ${row.section} step ${row.index}: ${row.resource}.${what}${of}${guard}`;
}

function block(row: ScheduleRow, item: string | undefined, task: string, draggable: boolean): HTMLElement {
  const work = row.stage.endsWith('Work');
  const attrs: Record<string, string | number> = {
    class: `tslab-step tslab-step-${work ? 'work' : COUNTER[row.stage] ?? 'other'}${row.guard !== 'Always' ? ' tslab-step-guarded' : ''}`,
    style: `background:${STAGE_FILLS[row.stage] ?? WORK_FILL}`,
    title: blockTitle(row, item, task),
    'data-resource': row.resource,
    'data-counter': COUNTER[row.stage] ?? '',
    'data-section': row.section,
    'data-index': row.index,
    'data-guard': row.guard
  };
  if (draggable) {
    attrs.draggable = 'true';
    attrs.tabindex = 0;
  }
  return h(
    'div',
    attrs,
    h('span', { class: 'tslab-step-resource' }, breakable(row.resource)),
    ' ',
    h('span', { class: 'tslab-step-verb' }, breakable(work ? (row.label ?? 'work') : VERBS[row.stage] ?? row.stage)),
    item ? ' ' : null,
    item ? h('span', { class: 'tslab-step-item' }, item) : null,
    row.guard !== 'Always' ? h('span', { class: 'tslab-step-guard' }, ` ${row.guard}`) : null
  );
}

/** The whole-list index of a section's `index`-th step. */
function wholeIndex(steps: ScheduleRow[], section: string, index: number): number {
  return steps.filter(s => ORDER[s.section] < ORDER[section]).length + index;
}

/** Moving one place left or right, across section borders as the schedule editor's up and down do. */
export function neighbourMove(steps: ScheduleRow[], row: ScheduleRow, direction: -1 | 1): { section: Section; to_index: number } | null {
  const count = steps.filter(s => s.section === row.section).length;
  const s = ORDER[row.section];
  if (direction < 0) {
    return row.index > 0 ? { section: row.section, to_index: row.index - 1 } : s > 0 ? { section: SECTIONS[s - 1], to_index: 1e6 } : null;
  }
  return row.index < count - 1 ? { section: row.section, to_index: row.index + 1 } : s < 2 ? { section: SECTIONS[s + 1], to_index: 0 } : null;
}

function wireMoves(lane: HTMLElement, task: string, steps: ScheduleRow[], blocks: Map<HTMLElement, ScheduleRow>, onMove: (m: MoveRequest) => void): void {
  const request = (row: ScheduleRow, section: Section, to_index: number) =>
    onMove({ task, index: wholeIndex(steps, row.section, row.index), section, to_index, resource: row.resource, stage: row.stage, label: row.label });
  let dragged: ScheduleRow | null = null;
  for (const [el, row] of blocks) {
    el.addEventListener('dragstart', event => {
      dragged = row;
      event.dataTransfer?.setData('text/plain', `${task}:${row.section}:${row.index}`);
      el.classList.add('tslab-dragging');
    });
    el.addEventListener('dragend', () => el.classList.remove('tslab-dragging'));
    el.addEventListener('keydown', event => {
      if (!event.altKey || (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight')) {
        return;
      }
      const target = neighbourMove(steps, row, event.key === 'ArrowLeft' ? -1 : 1);
      event.preventDefault();
      if (target) {
        request(row, target.section, target.to_index);
      }
    });
  }
  for (const cell of lane.querySelectorAll<HTMLElement>('.tslab-lane-section')) {
    cell.addEventListener('dragover', event => {
      if (dragged) {
        event.preventDefault();
      }
    });
    cell.addEventListener('drop', event => {
      if (!dragged) {
        return;
      }
      event.preventDefault();
      const section = cell.dataset.section as Section;
      const onto = (event.target as HTMLElement).closest<HTMLElement>('.tslab-step');
      const before = onto ? blocks.get(onto) : undefined;
      let to_index = before ? before.index : steps.filter(s => s.section === section).length;
      if (before && dragged.section === section && dragged.index < before.index) {
        to_index -= 1;
      }
      const row = dragged;
      dragged = null;
      if (!(row.section === section && row.index === to_index)) {
        request(row, section, to_index);
      }
    });
  }
}

function wireDependencies(root: HTMLElement): void {
  const all = [...root.querySelectorAll<HTMLElement>('.tslab-step[data-counter]:not([data-counter=""])')];
  for (const el of all) {
    const lane = el.closest('.tslab-lane');
    const wanted = DEPENDS_ON[el.dataset.counter ?? ''];
    const partners = all.filter(o => o.closest('.tslab-lane') !== lane && o.dataset.resource === el.dataset.resource && o.dataset.counter === wanted);
    el.addEventListener('mouseenter', () => {
      el.classList.add('tslab-step-hover');
      partners.forEach(p => p.classList.add('tslab-step-dep'));
    });
    el.addEventListener('mouseleave', () => {
      el.classList.remove('tslab-step-hover');
      partners.forEach(p => p.classList.remove('tslab-step-dep'));
    });
    if (partners.length) {
      const names = [...new Set(partners.map(p => p.closest<HTMLElement>('.tslab-lane')?.dataset.task))].join(', ');
      el.title += `\n${PAIRING[el.dataset.counter ?? '']} ${names}`;
    }
  }
}

export function createSwimlane(schedule: ScheduleRow[], options: SwimlaneOptions = {}): HTMLElement {
  const lanes = swimlaneRows(schedule);
  if (!lanes.size) {
    return h('div', { class: 'tslab-swimlane' }, h('i', {}, 'no schedule (the design could not be lowered)'));
  }
  const info = new Map((options.tasks ?? []).map(t => [t.name, t]));
  const grid = h(
    'div',
    { class: 'tslab-swimlane-grid', role: 'table' },
    h('div', { class: 'tslab-lane-heading' }, 'task'),
    ...SECTIONS.map(section => h('div', { class: `tslab-lane-heading tslab-heading-${section}` }, section === 'loop' ? 'loop (trip k)' : section))
  );
  for (const [task, steps] of lanes) {
    const items = stageItems(steps);
    const blocks = new Map<HTMLElement, ScheduleRow>();
    const lane = h('div', { class: 'tslab-lane', role: 'row', 'data-task': task }, laneTitle(task, info.get(task)));
    for (const section of SECTIONS) {
      const cell = h('div', { class: `tslab-lane-section tslab-section-${section}`, 'data-section': section });
      for (const row of steps.filter(s => s.section === section)) {
        const el = block(row, items.get(row), task, !!options.onMove);
        blocks.set(el, row);
        cell.appendChild(el);
      }
      lane.appendChild(cell);
    }
    if (options.onMove) {
      wireMoves(lane, task, steps, blocks, options.onMove);
    }
    grid.appendChild(lane);
  }
  wireDependencies(grid);
  const legend = h(
    'div',
    { class: 'tslab-swimlane-legend' },
    'items: #i in the head, k on loop trip k, n after the last trip; a guarded step (every(2), when_true(...)) runs on some trips only; hover a step for what it waits on',
    options.onMove ? '; drag a step, or focus it and press Alt+Left/Right, to reorder' : ''
  );
  return h('div', { class: 'tslab-swimlane' }, grid, legend);
}
