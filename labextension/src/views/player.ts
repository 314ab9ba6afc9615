/**
 * The replay player: a checker trace as a swimlane (one lane per task, one column per step, the fault marked),
 * step buttons, autoplay, a slider, arrow keys, and the state after each step (full/empty credits per stage,
 * held slots, each task's next op). Everything comes from the saved trace: stepping never asks a kernel.
 */

import { FAULT_COLOUR, SAFE_COLOUR, h, s } from './dom';
import type { Entry, Op, State, Step, TracePayload } from './types';

export const STAGE_COLOURS: Record<string, string> = { Acquire: '#bf8700', Wait: '#bf8700', Commit: '#1a7f37', Release: '#1a7f37' };
export const WORK_COLOUR = '#0969da';
const FAULTS = ['deadlock', 'race', 'pdl-order'];
const PLAY_MS = 600;
const PLAY = '\u25b6';
const PAUSE = '\u275a\u275a';

export function stageColour(stage: string): string {
  const key = Object.keys(STAGE_COLOURS).find(k => stage.endsWith(k));
  return key ? STAGE_COLOURS[key] : WORK_COLOUR;
}

export function opText(op: Op | null | undefined): string {
  return op ? `${op.stage}(${op.resource}${op.label ? '.' + op.label : ''})` : '';
}

export function entryText(entry: Entry | null | undefined): string {
  if (!entry) {
    return '';
  }
  let text = `${entry.section}[${entry.index}]`;
  if (entry.iteration !== null && entry.iteration !== undefined) {
    text += ` iter ${entry.iteration}`;
  }
  if (entry.guard) {
    text += ` [${entry.guard}]`;
  }
  if (entry.tile) {
    text += ` tile ${entry.tile}`;
  }
  return text + (entry.part ? ` (${entry.part})` : '');
}

export function headline(trace: TracePayload): string {
  const moves = trace.steps.length - 1;
  const run = trace.run ? ` [${trace.run}]` : '';
  return `${trace.design}: ${trace.fault.kind.toUpperCase()} after ${moves} step${moves === 1 ? '' : 's'}${run}`;
}

/** True when the trace ends in a fault (its last step is the one to highlight). */
export function isFault(trace: TracePayload): boolean {
  return FAULTS.includes(trace.fault.kind);
}

export interface PlayerView {
  readonly node: HTMLElement;
  readonly index: number;
  show(index: number): void;
  dispose(): void;
}

export interface PlayerOptions {
  /** Called after the player moved to another step (a live widget tells its model). */
  onStep?: (index: number) => void;
  /** The step shown first. */
  start?: number;
}

/** Build a player for `trace`; `show(i)` moves it, `dispose()` stops autoplay. */
export function createPlayer(trace: TracePayload, options: PlayerOptions = {}): PlayerView {
  const last = trace.steps.length - 1;
  const scale = Math.max(
    1,
    ...trace.steps.flatMap(st => [...Object.values(st.state.prod_credits), ...Object.values(st.state.cons_credits)])
  );
  // the lanes fit the width the player gets (a column per step, 6 to 20 px), drawn again when it changes; text is
  // never scaled down: a trace too long even at 6 px a step scrolls sideways
  const lanesBox = h('div', { class: 'tslab-lanes-box' });
  let lanes = createLanes(trace);
  let drawnRoom = 0;
  lanesBox.appendChild(lanes.node);
  const slider = h('input', { type: 'range', min: 0, max: last, value: 0, 'aria-label': 'step' }) as HTMLInputElement;
  const counter = h('span', { class: 'tslab-player-counter' });
  const play = h('button', { class: 'tslab-play', title: 'autoplay', 'aria-label': 'play' }, PLAY);
  const button = (label: string, title: string, to: () => number): HTMLElement => {
    const b = h('button', { title, 'aria-label': title }, label);
    b.addEventListener('click', () => show(to()));
    return b;
  };
  const caption = h('div', { class: 'tslab-player-caption' });
  const panel = h('div', { class: 'tslab-player-panel' });
  const node = h(
    'div',
    { class: 'tslab-player', tabindex: 0, 'data-lm-suppress-shortcuts': 'true', title: 'step with the Left/Right arrow keys (Home/End: first/last step)' },
    h('div', { class: 'tslab-player-title' }, h('b', { style: `color:${isFault(trace) ? FAULT_COLOUR : SAFE_COLOUR}` }, headline(trace)), legend()),
    lanesBox,
    h(
      'div',
      { class: 'tslab-player-controls' },
      button('\u00ab', 'first step', () => 0),
      button('\u2039', 'previous step', () => index - 1),
      play,
      button('\u203a', 'next step', () => index + 1),
      button('\u00bb', 'last step', () => last),
      slider,
      counter
    ),
    caption,
    panel
  );
  let index = -1;
  let timer: ReturnType<typeof setInterval> | null = null;

  function show(to: number): void {
    const next = Math.max(0, Math.min(Math.round(to), last));
    if (next === index) {
      return;
    }
    index = next;
    const step = trace.steps[index];
    slider.value = String(index);
    counter.textContent = `step ${index} / ${last}`;
    lanes.select(index);
    const atFault = index === last && isFault(trace);
    node.classList.toggle('tslab-at-fault', atFault);
    caption.replaceChildren(...captionNodes(step, trace, index === last));
    panel.replaceChildren(...statePanel(step.state, scale));
    if (index === last) {
      stop();
    }
    if (ready) {
      options.onStep?.(index);
    }
  }
  function stop(): void {
    if (timer !== null) {
      clearInterval(timer);
      timer = null;
    }
    play.textContent = PLAY;
    play.setAttribute('aria-label', 'play');
  }
  play.addEventListener('click', () => {
    if (timer !== null) {
      stop();
      return;
    }
    if (index === last) {
      show(0);
    }
    play.textContent = PAUSE;
    play.setAttribute('aria-label', 'pause');
    timer = setInterval(() => show(index + 1), PLAY_MS);
  });
  slider.addEventListener('input', () => show(Number(slider.value)));
  lanesBox.addEventListener('click', event => {
    const col = (event.target as Element).closest?.('[data-step]');
    if (col) {
      show(Number(col.getAttribute('data-step')));
    }
  });
  node.addEventListener('keydown', (event: KeyboardEvent) => {
    const delta = ({ ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity } as Record<string, number>)[event.key];
    if (delta === undefined || (event.target as Element).tagName === 'INPUT') {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    show(Number.isFinite(delta) ? index + delta : delta < 0 ? 0 : last);
  });
  let ready = false;
  show(options.start ?? 0);
  ready = true;
  const resize =
    typeof ResizeObserver === 'undefined'
      ? null
      : new ResizeObserver(() => {
          const room = lanesBox.clientWidth;
          if (room > 0 && Math.abs(room - drawnRoom) > 4) {
            drawnRoom = room;
            lanes = createLanes(trace, room);
            lanesBox.replaceChildren(lanes.node);
            lanes.select(index);
          }
        });
  resize?.observe(lanesBox);
  return {
    node,
    get index() {
      return index;
    },
    show,
    dispose: () => {
      stop();
      resize?.disconnect();
    }
  };
}

function legend(): HTMLElement {
  const key = (name: string, colour: string) => h('span', {}, h('span', { style: `color:${colour}` }, '\u25a0'), ` ${name} `);
  return h(
    'span',
    { class: 'tslab-legend' },
    key('acquire/wait', STAGE_COLOURS.Wait),
    key('work', WORK_COLOUR),
    key('commit/release', STAGE_COLOURS.Commit),
    h('span', { style: `color:${FAULT_COLOUR}` }, '\u2716'),
    ' fault'
  );
}

const LANE = 24;
/** The task names' column: as wide as the longest name at 11 px monospace (0.62 em a character), at most 130 px. */
const labelWidth = (trace: TracePayload) => Math.min(130, Math.ceil(Math.max(4, ...trace.tasks.map(t => t.length)) * 6.9) + 12);

/** The swimlane: a square per step in its task's lane, the fault's tasks marked after the last step; `room` is the
 * width it may take (a column per step of 4 to 20 px). */
function createLanes(trace: TracePayload, room = 970): { node: SVGElement; select(index: number): void } {
  const n = trace.steps.length;
  const LABEL = labelWidth(trace);
  const col = Math.max(4, Math.min(20, Math.floor((room - LABEL - 2) / (n + 2))));
  const width = LABEL + col * (n + 2);
  const height = LANE * trace.tasks.length + 18;
  const laneY = (task: string) => trace.tasks.indexOf(task) * LANE;
  const cursor = s('rect', { class: 'tslab-cursor', x: LABEL, y: 0, width: col, height: height - 18, fill: '#8c959f', opacity: 0.25 });
  const svg = s('svg', { class: 'tslab-lanes', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' });
  trace.tasks.forEach((task, i) => {
    svg.appendChild(s('text', { x: 4, y: i * LANE + 16, class: 'tslab-lane-label' }, task));
    svg.appendChild(s('line', { x1: LABEL, x2: width, y1: i * LANE + LANE / 2, y2: i * LANE + LANE / 2, stroke: '#d0d7de' }));
  });
  svg.appendChild(cursor);
  const lastIndex = n - 1;
  for (const step of trace.steps.slice(1)) {
    const faultStep = step.index === lastIndex && isFault(trace);
    svg.appendChild(
      s(
        'rect',
        {
          x: LABEL + step.index * col + (col > 5 ? 1 : 0.5),
          y: laneY(step.task ?? '') + 5,
          width: col > 5 ? col - 2 : col - 1,
          height: LANE - 10,
          fill: stageColour(step.op?.stage ?? ''),
          class: faultStep ? 'tslab-step tslab-fault-step' : 'tslab-step',
          'data-step': step.index
        },
        s('title', {}, `${step.index}. ${step.task} ${opText(step.op)} ${entryText(step.entry)}`)
      )
    );
  }
  for (const [task, text] of faultMarks(trace)) {
    const x = LABEL + n * col + col / 2;
    const y = laneY(task) + LANE / 2;
    svg.appendChild(
      s(
        'text',
        { x, y: y + 5, 'text-anchor': 'middle', fill: FAULT_COLOUR, class: 'tslab-fault-mark', 'data-step': lastIndex },
        '\u2716',
        s('title', {}, `${text}: ${trace.fault.message}`)
      )
    );
  }
  const every = Math.max(n <= 40 ? 1 : Math.ceil(n / 20), Math.ceil(18 / col)); // numbers never touch
  for (let i = 0; i < n; i += every) {
    svg.appendChild(s('text', { x: LABEL + i * col + col / 2, y: height - 4, 'text-anchor': 'middle', class: 'tslab-tick' }, String(i)));
  }
  return {
    node: svg,
    select(index: number) {
      cursor.setAttribute('x', String(LABEL + index * col));
    }
  };
}

/** The fault's tasks and what each was doing: blocked stages for a deadlock, writer and victim for a race. */
export function faultMarks(trace: TracePayload): [string, string][] {
  const f = trace.fault;
  if (f.kind === 'deadlock') {
    return (f.blocked ?? []).map(b => [b.task, `blocked: ${b.stage}`]);
  }
  if (f.kind === 'race' && f.writer && f.victim) {
    return [
      [f.writer.task, `writes ${f.writer.resource}`],
      [f.victim.task, `${f.victim.access} ${f.victim.resource}`]
    ];
  }
  return [];
}

function captionNodes(step: Step, trace: TracePayload, last: boolean): (Node | string)[] {
  const out: (Node | string)[] =
    step.task === null
      ? [h('b', {}, 'step 0'), ': initial state of ', h('code', {}, trace.design)]
      : [h('b', {}, `step ${step.index}`), ': ', h('b', {}, step.task), ' ran ', h('code', {}, opText(step.op)), ` (${entryText(step.entry)})`];
  if (last && [...FAULTS, 'complete'].includes(trace.fault.kind)) {
    const colour = trace.fault.kind === 'complete' ? SAFE_COLOUR : FAULT_COLOUR;
    out.push(
      h('div', { class: 'tslab-fault-message', style: `color:${colour}` }, h('b', {}, trace.fault.kind.toUpperCase()), `: ${trace.fault.message}`)
    );
  }
  return out;
}

function bar(value: number, scale: number, colour: string): HTMLElement {
  const width = Math.round((60 * value) / scale);
  return h(
    'span',
    { class: 'tslab-bar' },
    h('span', { style: `display:inline-block;width:${width}px;height:9px;background:${colour}` }),
    h('span', { style: `display:inline-block;width:${60 - width}px` }),
    ` ${value}`
  );
}

const STATUS_COLOURS: Record<string, string> = { runnable: SAFE_COLOUR, blocked: FAULT_COLOUR, done: '#57606a' };

/** Credits per stage as bars, held slots, and each task's next op. */
export function statePanel(state: State, scale: number): HTMLElement[] {
  const stages = Object.keys(state.prod_credits);
  const credits = stages.length
    ? h(
        'table',
        { class: 'tslab-credits' },
        h('tr', {}, h('th', {}, 'stage'), h('th', {}, 'full'), h('th', {}, 'empty')),
        ...stages.map(k =>
          h('tr', {}, h('td', {}, h('code', {}, k)), h('td', {}, bar(state.prod_credits[k], scale, '#0969da')), h('td', {}, bar(state.cons_credits[k] ?? 0, scale, '#8c959f')))
        )
      )
    : h('i', {}, 'no pipelined resource');
  const held = Object.entries(state.held).filter(([, entries]) => entries.length);
  const heldList = h(
    'ul',
    { class: 'tslab-held' },
    ...(held.length
      ? held.map(([res, entries]) =>
          h('li', {}, h('code', {}, res), ': ' + entries.map(([access, task, slot]) => `${access} by ${task} (slot ${slot})`).join(', '))
        )
      : [h('li', {}, h('i', {}, 'none'))])
  );
  const nexts = h(
    'table',
    { class: 'tslab-next' },
    ...Object.entries(state.next_ops).map(([task, n]) =>
      h(
        'tr',
        {},
        h('td', {}, task),
        h('td', { style: `color:${STATUS_COLOURS[n.status] ?? '#57606a'}` }, n.status),
        h('td', {}, h('code', {}, opText(n.op))),
        h('td', { class: 'tslab-waits' }, n.waits_for ?? '')
      )
    )
  );
  return [
    h('div', {}, h('b', {}, 'credits'), credits),
    h(
      'div',
      {},
      h('b', {}, 'held'),
      heldList,
      h('div', { class: 'tslab-pdl' }, h('b', {}, 'PDL wait done'), `: ${state.pdl_wait ? 'yes' : 'no'}`),
      h('div', { class: 'tslab-cursors' }, h('b', {}, 'cursors'), `: (${state.cursors.join(', ')})`)
    ),
    h('div', {}, h('b', {}, 'next op'), nexts)
  ];
}
