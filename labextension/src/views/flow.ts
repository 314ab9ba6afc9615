/**
 * A design's resource/task flow, as TS's tutorials draw it: the tasks in a row, each pipelined resource a ring
 * of its stages between the task that produces into it and the one that consumes from it. Given `onSelect`, a
 * click on a ring picks that resource (the Studio shows its fields).
 */

import { h, s } from './dom';
import type { ScheduleRow } from './types';

export interface Ring {
  num_stages: number;
  pipeline_type?: string;
  num_bytes?: number | null;
}

export interface FlowEdge {
  resource: string;
  producers: string[];
  consumers: string[];
}

const PRODUCER = /^Producer/;
const CONSUMER = /^Consumer/;

/** Each pipelined resource with the tasks that produce into it and consume from it (TS's schedule table). */
export function flowEdges(schedule: ScheduleRow[], rings: Record<string, Ring>): FlowEdge[] {
  const edges = new Map<string, FlowEdge>();
  for (const row of schedule) {
    if (!(row.resource in rings)) {
      continue;
    }
    const edge = edges.get(row.resource) ?? { resource: row.resource, producers: [], consumers: [] };
    const side = PRODUCER.test(row.stage) ? edge.producers : CONSUMER.test(row.stage) ? edge.consumers : null;
    if (side && !side.includes(row.task)) {
      side.push(row.task);
    }
    edges.set(row.resource, edge);
  }
  return [...edges.values()];
}

const BOX_W = 120;
const BOX_H = 30;
const GAP = 150;
const RING_R = 20;
const TOP = 8;

/** One ring: `n` arc segments around a circle (one per stage), the name and stage count under it. */
function ring(name: string, r: Ring, cx: number, cy: number, selected: boolean): SVGElement {
  const n = Math.max(1, r.num_stages);
  const parts: SVGElement[] = [];
  for (let i = 0; i < n; i++) {
    const a0 = (2 * Math.PI * i) / n - Math.PI / 2 + 0.06;
    const a1 = (2 * Math.PI * (i + 1)) / n - Math.PI / 2 - 0.06;
    const p = (a: number) => `${(cx + RING_R * Math.cos(a)).toFixed(1)},${(cy + RING_R * Math.sin(a)).toFixed(1)}`;
    const large = a1 - a0 > Math.PI ? 1 : 0;
    parts.push(s('path', { d: n === 1 ? `M ${cx} ${cy - RING_R} a ${RING_R} ${RING_R} 0 1 1 -0.1 0` : `M ${p(a0)} A ${RING_R} ${RING_R} 0 ${large} 1 ${p(a1)}`, class: 'tslab-ring-stage' }));
  }
  const bytes = r.num_bytes ? `, ${Math.round(r.num_bytes / 1024)} KiB each` : '';
  return s(
    'g',
    { class: selected ? 'tslab-ring tslab-ring-selected' : 'tslab-ring', 'data-resource': name, tabindex: 0, role: 'button' },
    s('title', {}, `${name}: ${r.pipeline_type ?? ''} pipeline, ${n} stage${n === 1 ? '' : 's'}${bytes}; click to edit its fields`),
    s('circle', { cx, cy, r: RING_R + 6, class: 'tslab-ring-hit' }),
    ...parts,
    s('text', { x: cx, y: cy + 4, 'text-anchor': 'middle', class: 'tslab-ring-count' }, String(n)),
    s('text', { x: cx, y: cy + RING_R + 16, 'text-anchor': 'middle', class: 'tslab-ring-name' }, name)
  );
}

export interface FlowOptions {
  selected?: string | null;
  onSelect?: (resource: string) => void;
}

export function createFlow(schedule: ScheduleRow[], rings: Record<string, Ring>, options: FlowOptions = {}): HTMLElement {
  const tasks = [...new Set(schedule.map(r => r.task))];
  const edges = flowEdges(schedule, rings).filter(e => e.producers.length && e.consumers.length);
  if (!tasks.length || !edges.length) {
    return h('div', { class: 'tslab-flow' }, h('i', {}, 'no pipelines between tasks to draw'));
  }
  const x = (task: string) => 4 + tasks.indexOf(task) * (BOX_W + GAP);
  const ringRow = TOP + BOX_H + 34;
  const used = new Map<number, number>(); // rings at one spot stack downwards
  const drawn: SVGElement[] = [];
  let bottom = ringRow + RING_R + 24;
  for (const e of edges) {
    const from = x(e.producers[0]) + BOX_W / 2;
    const to = x(e.consumers[0]) + BOX_W / 2;
    const spot = Math.round((from + to) / 2);
    const level = used.get(spot) ?? 0;
    used.set(spot, level + 1);
    const cy = ringRow + level * (2 * RING_R + 34);
    bottom = Math.max(bottom, cy + RING_R + 24);
    for (const p of e.producers) {
      drawn.push(s('path', { d: `M ${x(p) + BOX_W / 2} ${TOP + BOX_H} Q ${x(p) + BOX_W / 2} ${cy} ${spot - RING_R - 6} ${cy}`, class: 'tslab-flow-arrow', 'marker-end': 'url(#tslab-arrow)' }));
    }
    for (const c of e.consumers) {
      drawn.push(s('path', { d: `M ${spot + RING_R + 6} ${cy} Q ${x(c) + BOX_W / 2} ${cy} ${x(c) + BOX_W / 2} ${TOP + BOX_H + 2}`, class: 'tslab-flow-arrow', 'marker-end': 'url(#tslab-arrow)' }));
    }
    drawn.push(ring(e.resource, rings[e.resource], spot, cy, options.selected === e.resource));
  }
  const width = x(tasks[tasks.length - 1]) + BOX_W + 4;
  const boxes = tasks.map(t =>
    s('g', { class: 'tslab-flow-task' }, s('rect', { x: x(t), y: TOP, width: BOX_W, height: BOX_H, rx: 5 }), s('text', { x: x(t) + BOX_W / 2, y: TOP + 19, 'text-anchor': 'middle' }, t))
  );
  const defs = s('defs', {}, s('marker', { id: 'tslab-arrow', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 6, markerHeight: 6, orient: 'auto' }, s('path', { d: 'M 0 0 L 8 4 L 0 8 z', class: 'tslab-flow-head' })));
  const svg = s('svg', { class: 'tslab-flow-svg', viewBox: `0 0 ${width} ${bottom}`, width, height: bottom, role: 'img' }, defs, ...drawn, ...boxes);
  if (options.onSelect) {
    for (const g of svg.querySelectorAll<SVGElement>('.tslab-ring')) {
      const pick = () => options.onSelect!(g.getAttribute('data-resource') ?? '');
      g.addEventListener('click', pick);
      g.addEventListener('keydown', event => {
        if ((event as KeyboardEvent).key === 'Enter' || (event as KeyboardEvent).key === ' ') {
          event.preventDefault();
          pick();
        }
      });
    }
  }
  const legend = options.onSelect ? 'a ring per pipeline, one arc per stage; click one to edit its fields' : 'a ring per pipeline, one arc per stage';
  return h('div', { class: 'tslab-flow' }, svg, h('div', { class: 'tslab-flow-legend' }, legend));
}
