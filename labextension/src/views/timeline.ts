/**
 * A profiled kernel's timeline: one lane per warp, grouped by task, each schedule step a slice coloured by what
 * it does (waits marked; a wait that overlaps the task's own asynchronous MMAs hatched), zoomed and panned with
 * the buttons, the keyboard (+ - arrows 0) or the wheel, and the step under the pointer named below the lanes.
 */

import { h, num, s } from './dom';
import type { TimelinePayload } from './types';

export const KIND_FILLS: Record<string, string> = {
  wait: '#d4a72c',
  overlapped: '#eed48b',
  work: '#0969da',
  signal: '#1a7f37',
  aux: '#8c959f'
};
const LANE = 14;
const GROUP_GAP = 8;
const LABEL = 130;
const WIDTH = 900; // the time axis where the container's width is not known (jsdom); else the container's
const AXIS = 18;

type Range = TimelinePayload['ranges'][number];

/** What a step does, as its colour says: wait (acquire/wait), overlapped wait, work, signal (commit/release), aux. */
export function kindOf(stage: string, resource: string, overlapped: string[]): string {
  if (stage === 'ConsumerWait' || stage === 'ProducerAcquire' || stage.includes('Try')) {
    return stage === 'ConsumerWait' && overlapped.includes(resource) ? 'overlapped' : 'wait';
  }
  if (stage === 'ProducerCommit' || stage === 'ConsumerRelease') {
    return 'signal';
  }
  return stage.endsWith('AuxWork') ? 'aux' : 'work';
}

function time(ns: number): string {
  return ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(1)} us` : `${Math.round(ns)} ns`;
}

export function describeRange(t: TimelinePayload, r: Range): string {
  const [task, warp, resource, stage, section, index, iteration, tile, start, end] = r;
  const trip = iteration === null ? '' : ` iter ${iteration}`;
  return `${t.tasks[task].name} warp ${warp}: ${stage}(${resource}) ${section}[${index}]${trip} tile ${tile}, ` +
    `${time(end - start)} at ${time(start)}`;
}

export interface TimelineView {
  node: HTMLElement;
  /** The time window shown, in ns. */
  window(): [number, number];
  zoom(factor: number, centre?: number): void;
  pan(fraction: number): void;
  reset(): void;
  dispose(): void;
}

export function createTimeline(t: TimelinePayload): TimelineView {
  const lanes: { task: number; warp: number; y: number }[] = [];
  let y = 0;
  t.tasks.forEach((task, i) => {
    for (const warp of task.warps) {
      lanes.push({ task: i, warp, y });
      y += LANE;
    }
    y += GROUP_GAP;
  });
  const height = y + AXIS;
  const laneOf = new Map(lanes.map(l => [`${l.task}:${l.warp}`, l]));
  const end = t.shown_until_ns || t.total_ns || 1;
  let view: [number, number] = [0, end];

  const svg = s('svg', { class: 'tslab-timeline-lanes', height, role: 'img' }) as SVGSVGElement;
  const detail = h('div', { class: 'tslab-timeline-detail' }, 'point at a step to name it');
  const range = h('span', { class: 'tslab-timeline-window' });
  let width = WIDTH; // text stays its own size: the axis takes the width the output area gives
  const x = (ns: number) => LABEL + ((ns - view[0]) / (view[1] - view[0])) * width;

  function draw(): void {
    const room = svg.parentElement?.clientWidth ?? 0;
    width = room > LABEL + 200 ? room - LABEL - 8 : WIDTH;
    svg.setAttribute('width', String(LABEL + width));
    svg.setAttribute('viewBox', `0 0 ${LABEL + width} ${height}`);
    const parts: SVGElement[] = [];
    t.tasks.forEach((task, i) => {
      const mine = lanes.filter(l => l.task === i);
      if (mine.length) {
        parts.push(s('text', { class: 'tslab-timeline-task', x: 2, y: mine[0].y + 10 }, task.name));
      }
    });
    for (const l of lanes) {
      parts.push(s('text', { class: 'tslab-lane-label', x: LABEL - 4, y: l.y + 10, 'text-anchor': 'end' }, `warp ${l.warp}`));
      parts.push(s('line', { class: 'tslab-timeline-rule', x1: LABEL, x2: LABEL + width, y1: l.y + LANE - 1, y2: l.y + LANE - 1 }));
    }
    for (const [task, warp, startNs, endNs] of t.lifetimes ?? []) {
      const l = laneOf.get(`${task}:${warp}`);
      if (l && endNs >= view[0] && startNs <= view[1]) {
        const x0 = Math.max(LABEL, x(startNs));
        const x1 = Math.min(LABEL + width, x(endNs));
        parts.push(s('rect', { class: 'tslab-timeline-life', x: x0, y: l.y + 2, width: Math.max(0, x1 - x0), height: LANE - 4 }));
      }
    }
    for (const r of t.ranges) {
      const [task, warp, resource, stage, , , , , startNs, endNs] = r;
      const l = laneOf.get(`${task}:${warp}`);
      if (!l || endNs < view[0] || startNs > view[1]) {
        continue;
      }
      const x0 = Math.max(LABEL, x(startNs));
      const x1 = Math.min(LABEL + width, x(endNs));
      const kind = kindOf(stage, resource, t.tasks[task].overlapped ?? []);
      const rect = s('rect', { class: `tslab-slice tslab-kind-${kind}`, x: x0, y: l.y + 2, width: Math.max(0.8, x1 - x0),
        height: LANE - 4, fill: KIND_FILLS[kind] }, s('title', {}, describeRange(t, r)));
      rect.addEventListener('mouseenter', () => { detail.textContent = describeRange(t, r); });
      parts.push(rect);
    }
    const ticks = 5;
    for (let i = 0; i <= ticks; i++) {
      const ns = view[0] + ((view[1] - view[0]) * i) / ticks;
      parts.push(s('text', { class: 'tslab-tick', x: x(ns), y: height - 4, 'text-anchor': i === 0 ? 'start' : i === ticks ? 'end' : 'middle' }, time(ns)));
    }
    svg.replaceChildren(...parts);
    range.textContent = `${time(view[0])} to ${time(view[1])}`;
  }

  function clamp(lo: number, hi: number): [number, number] {
    const span = Math.min(Math.max(hi - lo, 32), end);
    const start = Math.min(Math.max(lo, 0), end - span);
    return [start, start + span];
  }
  const api: TimelineView = {
    node: h('div'),
    window: () => [view[0], view[1]],
    zoom(factor: number, centre?: number) {
      const c = centre ?? (view[0] + view[1]) / 2;
      view = clamp(c - (c - view[0]) / factor, c + (view[1] - c) / factor);
      draw();
    },
    pan(fraction: number) {
      const span = view[1] - view[0];
      view = clamp(view[0] + span * fraction, view[1] + span * fraction);
      draw();
    },
    reset() {
      view = [0, end];
      draw();
    },
    dispose() {
      api.node.remove();
    }
  };
  const button = (label: string, title: string, act: () => void) => {
    const b = h('button', { type: 'button', title, 'aria-label': title }, label) as HTMLButtonElement;
    b.addEventListener('click', act);
    return b;
  };
  const controls = h('div', { class: 'tslab-timeline-controls' },
    button('−', 'zoom out', () => api.zoom(0.5)), button('+', 'zoom in', () => api.zoom(2)),
    button('‹', 'pan left', () => api.pan(-0.25)), button('›', 'pan right', () => api.pan(0.25)),
    button('reset', 'show all', () => api.reset()), range);
  const legend = h('span', { class: 'tslab-legend' }, ...Object.entries(KIND_FILLS).map(([kind, fill]) =>
    h('span', { class: 'tslab-legend-item' }, h('span', { class: 'tslab-swatch', style: `background:${fill}` }), ` ${kind} `)));
  const overhead = t.overhead ? `; markers ${t.overhead.toFixed(2)}x the block's time with one marker` : '';
  const shown = t.shown_until_ns < t.total_ns ? ` (the first ${time(t.shown_until_ns)} of ${time(t.total_ns)} shown)` : '';
  const title = h('div', { class: 'tslab-timeline-title' },
    h('b', {}, t.kernel), `: ${num(t.ranges.length)} steps of ${t.tasks.reduce((n, task) => n + task.warps.length, 0)} warps` +
    `, block ${time((t.block_us ?? 0) * 1e3)}${shown}${overhead}`);
  const reading = t.reading.length ? h('ul', { class: 'tslab-timeline-reading' }, ...t.reading.map(line => h('li', {}, line))) : null;
  const frame = h('div', { class: 'tslab-timeline', tabindex: 0 }, title, reading, legend, controls, svg, detail);
  frame.addEventListener('keydown', event => {
    const actions: Record<string, () => void> = { '+': () => api.zoom(2), '=': () => api.zoom(2), '-': () => api.zoom(0.5),
      ArrowLeft: () => api.pan(-0.25), ArrowRight: () => api.pan(0.25), '0': () => api.reset() };
    const act = actions[event.key];
    if (act) {
      act();
      event.preventDefault();
    }
  });
  svg.addEventListener('wheel', event => {
    const box = svg.getBoundingClientRect();
    const at = box.width ? ((event.clientX - box.left) / box.width) * (LABEL + width) : LABEL + width / 2;
    const centre = view[0] + ((Math.min(Math.max(at, LABEL), LABEL + width) - LABEL) / width) * (view[1] - view[0]);
    api.zoom(event.deltaY < 0 ? 1.5 : 1 / 1.5, centre);
    event.preventDefault();
  }, { passive: false });
  api.node = frame;
  draw();
  // drawn again at the width the output area gives once it is in the page, and when that width changes
  const resize = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => draw());
  resize?.observe(frame);
  const dispose = api.dispose;
  api.dispose = () => {
    resize?.disconnect();
    dispose();
  };
  return api;
}
