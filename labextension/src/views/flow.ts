/**
 * A design's resource/task flow as a dataflow graph: the tasks in dataflow order from the top, each pipelined
 * resource a ring of its stages on the way from the task(s) that produce into it to the task(s) that consume
 * from it, a PipelineGroup a box around its members' rings (`flow_layout` places everything; this module only
 * draws). Text is drawn at its size (never scaled down). Given `onSelect`, a click on a ring (or a group's
 * title) picks that resource (the Studio shows its fields).
 */

import { h, s } from './dom';
import { type FlowLayout, type FlowNode, type Ring, type RingBox, RING_R, RING_TEXT_X, layoutFlow } from './flow_layout';
import type { ScheduleRow, TaskRow } from './types';

export { type FlowEdge, type Ring, dataflowOrder, flowEdges, layoutFlow } from './flow_layout';

/** One muted colour per resource for its edges, so crossing edges can be told apart. */
export const EDGE_COLOURS = ['#57606a', '#0969da', '#8250df', '#bf8700', '#1a7f37', '#cf222e', '#0550ae', '#953800'];

/** A work queue's mark where a ring's stages go: three stacked tiles. */
function queue(cx: number, cy: number): SVGElement[] {
  return [-7, 0, 7].map(dy => s('rect', { x: cx - 9, y: cy + dy - 2.5, width: 18, height: 5, rx: 1, class: 'tslab-queue-tile' }));
}

/** A ring's stages as arc segments around a circle at (cx, cy). */
function stages(n: number, cx: number, cy: number): SVGElement[] {
  if (n <= 1) {
    return [s('circle', { cx, cy, r: RING_R, class: 'tslab-ring-stage' })];
  }
  const p = (a: number) => `${(cx + RING_R * Math.cos(a)).toFixed(1)},${(cy + RING_R * Math.sin(a)).toFixed(1)}`;
  return Array.from({ length: n }, (_, i) => {
    const gap = Math.min(0.12, Math.PI / n / 3);
    const a0 = (2 * Math.PI * i) / n - Math.PI / 2 + gap;
    const a1 = (2 * Math.PI * (i + 1)) / n - Math.PI / 2 - gap;
    return s('path', { d: `M ${p(a0)} A ${RING_R} ${RING_R} 0 ${a1 - a0 > Math.PI ? 1 : 0} 1 ${p(a1)}`, class: 'tslab-ring-stage' });
  });
}

function ringTitle(name: string, r: Ring, clickable: boolean): string {
  if (r.scheduler) {
    return `${name}: a WorkQueue on TS's ${r.scheduler} tile scheduler, with no pipeline or warp of its own: each task waits on it for its block's next tile`;
  }
  const n = Math.max(1, r.num_stages);
  const bytes = r.num_bytes ? `, ${r.num_bytes.toLocaleString('en-US')} B each` : '';
  const group = r.group ? `; a member of PipelineGroup ${r.group}` : '';
  return `${name}: ${r.pipeline_type ?? ''} pipeline, ${n} stage${n === 1 ? '' : 's'}${bytes}${group}${clickable ? '; click to edit its fields' : ''}`;
}

function ring(box: RingBox, selected: string | null | undefined, clickable: boolean): SVGElement {
  const n = Math.max(1, box.ring.num_stages);
  const cx = box.x + 8 + RING_R;
  const cy = box.y + box.height / 2;
  const picked = selected === box.resource || (!!box.ring.group && selected === box.ring.group);
  const scheduler = !!box.ring.scheduler;
  return s(
    'g',
    { class: `tslab-ring${scheduler ? ' tslab-ring-queue' : ''}${picked ? ' tslab-ring-selected' : ''}`, 'data-resource': box.resource, ...(box.ring.group ? { 'data-group': box.ring.group } : {}), ...(scheduler ? {} : { tabindex: 0, role: 'button' }) },
    s('title', {}, ringTitle(box.resource, box.ring, clickable && !scheduler)),
    s('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: box.height / 2, class: 'tslab-ring-box' }),
    ...(scheduler ? queue(cx, cy) : stages(n, cx, cy)),
    scheduler ? null : s('text', { x: cx, y: cy + 4, 'text-anchor': 'middle', class: 'tslab-ring-count' }, String(n)),
    s('text', { x: box.x + RING_TEXT_X, y: cy - 3, class: 'tslab-ring-name' }, box.resource),
    s('text', { x: box.x + RING_TEXT_X, y: cy + 12, class: 'tslab-ring-detail' }, box.detail)
  );
}

function task(node: FlowNode, name: string): SVGElement {
  const cx = node.x + node.width / 2;
  const two = !!node.detail;
  return s(
    'g',
    { class: 'tslab-flow-task', 'data-task': name },
    s('title', {}, node.detail ? `${name}: ${node.detail}` : name),
    s('rect', { x: node.x, y: node.y, width: node.width, height: node.height, rx: 5 }),
    s('text', { x: cx, y: node.y + (two ? 17 : 18), 'text-anchor': 'middle', class: 'tslab-flow-task-name' }, name),
    two ? s('text', { x: cx, y: node.y + 32, 'text-anchor': 'middle', class: 'tslab-flow-task-detail' }, node.detail ?? '') : null
  );
}

function group(node: FlowNode, name: string, r: Ring | undefined, selected: string | null | undefined, clickable: boolean): SVGElement {
  const mode = r?.mode === 'Merge' ? 'merged' : (r?.mode ?? 'group').toLowerCase();
  return s(
    'g',
    { class: selected === name ? 'tslab-flow-group tslab-ring-selected' : 'tslab-flow-group', 'data-resource': name, tabindex: 0, role: 'button' },
    s('title', {}, `PipelineGroup ${name} (${r?.mode ?? ''}) of ${(r?.members ?? []).join(', ')}: one set of barriers for its members${clickable ? '; click to edit its fields' : ''}`),
    s('rect', { x: node.x, y: node.y, width: node.width, height: node.height, rx: 8, class: 'tslab-flow-group-box' }),
    s('text', { x: node.x + 8, y: node.y + 13, class: 'tslab-flow-group-name' }, `${name} \u00b7 ${mode}`)
  );
}

/** An edge's path through its corner points, each corner rounded. */
export function pathOf(points: { x: number; y: number }[], radius = 5): string {
  let d = `M ${points[0].x.toFixed(1)} ${points[0].y.toFixed(1)}`;
  for (let i = 1; i < points.length; i++) {
    const [a, p] = [points[i - 1], points[i]];
    const b = points[i + 1];
    if (!b) {
      d += ` L ${p.x.toFixed(1)} ${p.y.toFixed(1)}`;
      break;
    }
    const r = Math.min(radius, Math.hypot(p.x - a.x, p.y - a.y) / 2, Math.hypot(b.x - p.x, b.y - p.y) / 2);
    const towards = (q: { x: number; y: number }, len: number) => {
      const l = Math.hypot(q.x - p.x, q.y - p.y) || 1;
      return { x: p.x + ((q.x - p.x) * len) / l, y: p.y + ((q.y - p.y) * len) / l };
    };
    const [c0, c1] = [towards(a, r), towards(b, r)];
    d += ` L ${c0.x.toFixed(1)} ${c0.y.toFixed(1)} Q ${p.x.toFixed(1)} ${p.y.toFixed(1)} ${c1.x.toFixed(1)} ${c1.y.toFixed(1)}`;
  }
  return d;
}

export interface FlowOptions {
  selected?: string | null;
  onSelect?: (resource: string) => void;
  /** The tasks' warps (`Verdict.task_rows()`), shown under each task's name. */
  tasks?: TaskRow[];
}

let drawings = 0;

/** The SVG of a laid-out flow (exported for tests that check the geometry). */
export function drawFlow(layout: FlowLayout, rings: Record<string, Ring>, options: FlowOptions = {}): SVGElement {
  const clickable = !!options.onSelect;
  const colours = new Map<string, string>();
  const colour = (resource: string) => {
    const key = rings[resource]?.group ?? resource;
    if (!colours.has(key)) {
      colours.set(key, EDGE_COLOURS[colours.size % EDGE_COLOURS.length]);
    }
    return colours.get(key)!;
  };
  const markers = new Map<string, SVGElement>();
  // ids of this drawing's own: a url(#id) resolves to the first element with that id in the page, and another
  // drawing's may be hidden (a narrow Studio shows one view at a time), which would leave these arrows without heads.
  // Random as well as counted: each widget may load this module afresh, with a counter of its own.
  const drawing = `${++drawings}${Math.random().toString(36).slice(2, 8)}`;
  const marker = (c: string) => {
    const id = `tslab-arrow-${drawing}-${c.slice(1)}`;
    markers.set(id, s('marker', { id, viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto' }, s('path', { d: 'M 0 0 L 8 4 L 0 8 z', fill: c })));
    return `url(#${id})`;
  };
  const edges = layout.edges.map(e =>
    s('path', { d: pathOf(e.points), class: 'tslab-flow-arrow', stroke: colour(e.resource), 'marker-end': marker(colour(e.resource)), 'data-resource': e.resource, 'data-from': e.from, 'data-to': e.to })
  );
  const nodes: SVGElement[] = [];
  for (const node of layout.nodes) {
    const name = node.id.slice(node.id.indexOf(':') + 1);
    if (node.kind === 'task') {
      nodes.push(task(node, name));
    } else {
      if (node.kind === 'group') {
        nodes.push(group(node, name, rings[name], options.selected, clickable));
      }
      nodes.push(...node.rings.map(b => ring(b, options.selected, clickable)));
    }
  }
  return s(
    'svg',
    { class: 'tslab-flow-svg', viewBox: `0 0 ${layout.width} ${layout.height}`, width: layout.width, height: layout.height, role: 'img', 'aria-label': `flow of ${layout.tasks.join(', ')}` },
    s('defs', {}, ...markers.values()),
    ...edges,
    ...nodes
  );
}

export function createFlow(schedule: ScheduleRow[], rings: Record<string, Ring>, options: FlowOptions = {}): HTMLElement {
  const layout = layoutFlow(schedule, rings, options.tasks ?? []);
  if (!layout.tasks.length || !layout.edges.length) {
    return h('div', { class: 'tslab-flow' }, h('i', {}, 'no pipelines between tasks to draw'));
  }
  const svg = drawFlow(layout, rings, options);
  const highlight = (resource: string, on: boolean) => {
    for (const e of svg.querySelectorAll<SVGElement>('.tslab-flow-arrow')) {
      const r = e.getAttribute('data-resource') ?? '';
      if (r === resource || rings[r]?.group === resource) {
        e.classList.toggle('tslab-flow-arrow-lit', on);
      }
    }
  };
  for (const g of svg.querySelectorAll<SVGElement>('.tslab-ring, .tslab-flow-group')) {
    const resource = g.getAttribute('data-resource') ?? '';
    g.addEventListener('mouseenter', () => highlight(resource, true));
    g.addEventListener('mouseleave', () => highlight(resource, false));
    if (options.onSelect && !g.classList.contains('tslab-ring-queue')) { // a work queue has no fields to edit
      const pick = () => options.onSelect!(resource);
      g.addEventListener('click', pick);
      g.addEventListener('keydown', event => {
        if ((event as KeyboardEvent).key === 'Enter' || (event as KeyboardEvent).key === ' ') {
          event.preventDefault();
          pick();
        }
      });
    }
  }
  const queues = Object.values(rings).some(r => r.scheduler) ? '; a work queue (stacked tiles) hands each task its next tile' : '';
  const legend = 'tasks in dataflow order from the top; a ring per pipeline (one arc per stage) on the arrows from the task that fills it to the tasks that drain it' + queues + (options.onSelect ? '; click a ring to edit its fields' : '');
  return h('div', { class: 'tslab-flow' }, h('div', { class: 'tslab-flow-scroll' }, svg), h('div', { class: 'tslab-flow-legend' }, legend));
}
