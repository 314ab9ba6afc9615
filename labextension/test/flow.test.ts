import { describe, expect, it } from 'vitest';
import { createFlow, dataflowOrder, flowEdges, layoutFlow } from '../src/views/flow';
import type { FlowLayout } from '../src/views/flow_layout';
import { fixture } from './helpers';
import { synthetic } from './flow_synthetic';

const verdict = fixture('verdict_gemm_sm90.json');
const rings = verdict.rings;
/** The catalog's pipelined designs (recorded by tests/test_labextension_data.py) and an 8-task attention kernel. */
const FLOWS: Record<string, any> = { ...fixture('flows.json'), fa4_synthetic: synthetic() };

type Box = { x: number; y: number; width: number; height: number };
const overlap = (a: Box, b: Box, inset = 0.5) =>
  a.x + inset < b.x + b.width && b.x + inset < a.x + a.width && a.y + inset < b.y + b.height && b.y + inset < a.y + a.height;

/** Whether the axis-parallel segment p-q passes through the inside of box b. */
function crosses(p: { x: number; y: number }, q: { x: number; y: number }, b: Box): boolean {
  const [x0, x1, y0, y1] = [Math.min(p.x, q.x), Math.max(p.x, q.x), Math.min(p.y, q.y), Math.max(p.y, q.y)];
  return x0 < b.x + b.width - 0.5 && x1 > b.x + 0.5 && y0 < b.y + b.height - 0.5 && y1 > b.y + 0.5;
}

function problems(layout: FlowLayout): string[] {
  const found: string[] = [];
  layout.nodes.forEach((a, i) => layout.nodes.slice(i + 1).forEach(b => overlap(a, b) && found.push(`${a.id} overlaps ${b.id}`)));
  for (const e of layout.edges) {
    for (let i = 1; i < e.points.length; i++) {
      const [p, q] = [e.points[i - 1], e.points[i]];
      if (p.x !== q.x && p.y !== q.y) {
        found.push(`${e.resource} ${e.from}->${e.to}: a diagonal segment`);
      }
      for (const n of layout.nodes) {
        if (n.id !== e.from && n.id !== e.to && crosses(p, q, n)) {
          found.push(`${e.resource} ${e.from}->${e.to} crosses ${n.id}`);
        }
      }
    }
    const [from, to] = [layout.nodes.find(n => n.id === e.from)!, layout.nodes.find(n => n.id === e.to)!];
    const [start, end] = [e.points[0], e.points[e.points.length - 1]];
    const onSide = (pt: { x: number; y: number }, n: Box) => pt.x > n.x && pt.x < n.x + n.width && (Math.abs(pt.y - n.y) < 0.01 || Math.abs(pt.y - n.y - n.height) < 0.01);
    if (!onSide(start, from) || !onSide(end, to)) {
      found.push(`${e.resource} ${e.from}->${e.to}: does not start and end on its nodes' top or bottom`);
    }
  }
  // no edge runs close by another's arrowhead (two edges converging on one port read as one)
  const near = (pt: { x: number; y: number }, p: { x: number; y: number }, q: { x: number; y: number }) => {
    const [x, y] = [Math.min(Math.max(pt.x, Math.min(p.x, q.x)), Math.max(p.x, q.x)), Math.min(Math.max(pt.y, Math.min(p.y, q.y)), Math.max(p.y, q.y))];
    return Math.hypot(pt.x - x, pt.y - y);
  };
  for (const e of layout.edges) {
    const tip = e.points[e.points.length - 1];
    for (const o of layout.edges) {
      if (o !== e && o.points.slice(1).some((q, i) => near(tip, o.points[i], q) < 10)) {
        found.push(`${o.resource} ${o.from}->${o.to} runs by the arrowhead of ${e.resource} ${e.from}->${e.to}`);
      }
    }
  }
  // no two edges run along the same line
  const segments = layout.edges.flatMap((e, k) => e.points.slice(1).map((q, i) => ({ k, p: e.points[i], q })));
  for (const a of segments) {
    for (const b of segments) {
      const vertical = a.p.x === a.q.x && b.p.x === b.q.x && Math.abs(a.p.x - b.p.x) < 2;
      const horizontal = a.p.y === a.q.y && b.p.y === b.q.y && Math.abs(a.p.y - b.p.y) < 2;
      const span = (u: number, v: number, s: number, t: number) => Math.min(Math.max(u, v), Math.max(s, t)) - Math.max(Math.min(u, v), Math.min(s, t));
      if (a.k < b.k && ((vertical && span(a.p.y, a.q.y, b.p.y, b.q.y) > 1) || (horizontal && span(a.p.x, a.q.x, b.p.x, b.q.x) > 1))) {
        found.push(`${layout.edges[a.k].resource} and ${layout.edges[b.k].resource} run along one line`);
      }
    }
  }
  return found;
}

describe('the flow diagram', () => {
  it("draws each pipeline as a ring between the task that fills it and the one that drains it, from TS's table", () => {
    expect(flowEdges(verdict.schedule, rings)).toEqual([
      { resource: 'smem_ab', producers: ['LoadTask'], consumers: ['MmaTask'] },
      { resource: 'smem_epi', producers: ['MmaTask'], consumers: ['EpilogueTask'] }
    ]);
    const node = createFlow(verdict.schedule, rings, { tasks: verdict.tasks });
    expect([...node.querySelectorAll('.tslab-flow-task-name')].map(t => t.textContent)).toEqual(['LoadTask', 'MmaTask', 'EpilogueTask']);
    expect([...node.querySelectorAll('.tslab-flow-task-detail')].map(t => t.textContent)).toEqual(['warp 4', 'warps 0-3', 'warp 5']);
    const drawn = [...node.querySelectorAll<SVGElement>('.tslab-ring')].map(g => [g.getAttribute('data-resource'), g.querySelectorAll('.tslab-ring-stage').length]);
    expect(drawn).toEqual([
      ['smem_ab', rings.smem_ab.num_stages],
      ['smem_epi', rings.smem_epi.num_stages]
    ]);
    expect(node.querySelector('[data-resource="smem_ab"] .tslab-ring-detail')!.textContent).toBe('TmaAsync, 32 KiB');
    expect(node.querySelectorAll('.tslab-flow-arrow').length).toBe(4);
  });

  it("gives each drawing's arrowheads ids of its own (another drawing's may be hidden)", () => {
    const ids = (node: HTMLElement) => [...node.querySelectorAll('marker')].map(m => m.id);
    const [a, b] = [createFlow(verdict.schedule, rings, {}), createFlow(verdict.schedule, rings, {})];
    expect(ids(a).length).toBeGreaterThan(0);
    expect(ids(a).filter(id => ids(b).includes(id))).toEqual([]);
    for (const arrow of a.querySelectorAll('.tslab-flow-arrow')) {
      expect(ids(a)).toContain(arrow.getAttribute('marker-end')!.slice(5, -1));
    }
  });

  it('picks a resource on a click or Enter, and marks the picked one', () => {
    const picked: string[] = [];
    const node = createFlow(verdict.schedule, rings, { selected: 'smem_epi', onSelect: r => picked.push(r) });
    const [ab, epi] = node.querySelectorAll<SVGElement>('.tslab-ring');
    expect(epi.classList.contains('tslab-ring-selected')).toBe(true);
    ab.dispatchEvent(new MouseEvent('click'));
    ab.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    expect(picked).toEqual(['smem_ab', 'smem_ab']);
  });

  it("draws a static WorkQueue as a queue that hands every task its tiles, with no stages and no fields to edit", () => {
    const f = FLOWS.gemm_sm90;
    expect(f.rings.work_queue).toEqual({ num_stages: 0, pipeline_type: 'WorkQueue', num_bytes: null, scheduler: 'StaticPersistent' });
    const picked: string[] = [];
    const node = createFlow(f.schedule, f.rings, { tasks: f.tasks, onSelect: r => picked.push(r) });
    const queue = node.querySelector<SVGElement>('.tslab-ring[data-resource="work_queue"]')!;
    expect(queue.classList.contains('tslab-ring-queue')).toBe(true);
    expect(queue.querySelectorAll('.tslab-queue-tile').length).toBe(3);
    expect(queue.querySelector('.tslab-ring-count')).toBeNull();
    expect(queue.querySelector('.tslab-ring-detail')!.textContent).toBe('static scheduler');
    expect(queue.querySelector('title')!.textContent).toContain('no pipeline or warp of its own');
    const to = [...node.querySelectorAll('.tslab-flow-arrow[data-resource="work_queue"]')].map(e => e.getAttribute('data-to'));
    expect(to.sort()).toEqual(['task:EpilogueTask', 'task:LoadTask', 'task:MmaTask']);
    queue.dispatchEvent(new MouseEvent('click'));
    node.querySelector<SVGElement>('.tslab-ring[data-resource="smem_ab"]')!.dispatchEvent(new MouseEvent('click'));
    expect(picked).toEqual(['smem_ab']);
    expect(node.querySelector('.tslab-flow-legend')!.textContent).toContain('a work queue (stacked tiles) hands each task its next tile');
  });

  it('says so when there is no pipeline between tasks', () => {
    expect(createFlow(verdict.schedule, {}).textContent).toBe('no pipelines between tasks to draw');
  });
});

describe('the flow as a dataflow graph', () => {
  it('orders the tasks producers first, starting a cycle at the task that can move first', () => {
    const order = (name: string) => {
      const f = FLOWS[name];
      return dataflowOrder([...new Set<string>(f.schedule.map((r: any) => r.task))], flowEdges(f.schedule, f.rings), f.schedule);
    };
    expect(order('tma_copy')).toEqual(['LoadTask', 'StoreTask']);
    expect(order('gemm_sm90')).toEqual(['LoadTask', 'MmaTask', 'EpilogueTask']);
    expect(order('gemm_sm90_pingpong')).toEqual(['LoadTask', 'MmaTask0', 'MmaTask1', 'EpilogueTask']);
    // TS lists EpilogueTask first; the CLC scheduler feeds every task through the work queue
    expect(FLOWS.gemm_sm100.tasks[0].name).toBe('EpilogueTask');
    expect(order('gemm_sm100')).toEqual(['SchedulerTask', 'LoadTask', 'MmaTask', 'EpilogueTask']);
    expect(order('gemm_sm100_merged')).toEqual(['SchedulerTask', 'LoadATask', 'LoadBTask', 'MmaTask', 'EpilogueTask']);
    // S -> softmax -> P -> PV MMA -> its release frees the next S: the S MMA starts (it produces before it waits)
    expect(order('attention_tmem')).toEqual(['MmaSTask', 'SoftmaxTask', 'MmaOTask', 'EpilogueTask']);
    expect(order('fa4_synthetic')).toEqual(['SchedulerTask', 'LoadQTask', 'LoadKVTask', 'MmaTask', 'Softmax0Task', 'Softmax1Task', 'CorrectionTask', 'EpilogueTask']);
  });

  /** The edges that run upwards: the ones that close a cycle. */
  const UPWARDS: Record<string, string[]> = {
    tma_copy: [],
    gemm_sm90: [],
    gemm_sm90_pingpong: [],
    gemm_sm100: ['work_queue -> SchedulerTask'],
    gemm_sm100_merged: ['work_queue -> SchedulerTask'],
    attention_tmem: ['pv_done -> MmaSTask'],
    attention_sm90: [],
    fa4_synthetic: ['work_queue -> SchedulerTask', 'tmem_p0 -> MmaTask', 'tmem_p1 -> MmaTask']
  };

  for (const [name, f] of Object.entries(FLOWS)) {
    it(`lays out ${name}: producers above consumers, no node overlapping another, no edge through a node`, () => {
      const layout = layoutFlow(f.schedule, f.rings, f.tasks);
      expect(problems(layout)).toEqual([]);
      const box = (id: string) => layout.nodes.find(n => n.id === id)!;
      const upwards = layout.edges.filter(e => box(e.from).y > box(e.to).y).map(e => `${e.resource} -> ${e.to.replace('task:', '')}`);
      expect(upwards.sort()).toEqual(UPWARDS[name].sort());
      // every ring once, every producer and consumer linked to it
      for (const e of flowEdges(f.schedule, f.rings)) {
        const group = f.rings[e.resource].group ?? (f.rings[e.resource].members ? e.resource : null);
        const id = `ring:${group ?? e.resource}`;
        expect(layout.nodes.filter(n => n.rings.some(r => r.resource === e.resource) || (group === e.resource && n.id === id)).length).toBe(1);
        for (const p of e.producers) {
          expect(layout.edges.some(x => x.from === `task:${p}` && x.to === id)).toBe(true);
        }
        for (const c of e.consumers) {
          expect(layout.edges.some(x => x.from === id && x.to === `task:${c}`)).toBe(true);
        }
      }
    });
  }

  it("puts tasks that do the same job (ping-pong's two MMA warpgroups) side by side in their order", () => {
    const f = FLOWS.gemm_sm90_pingpong;
    const layout = layoutFlow(f.schedule, f.rings, f.tasks);
    const [mma0, mma1] = ['task:MmaTask0', 'task:MmaTask1'].map(id => layout.nodes.find(n => n.id === id)!);
    expect(mma0.y).toBe(mma1.y);
    expect(mma0.x).toBeLessThan(mma1.x);
  });

  it('keeps the catalog designs narrow enough for a Studio at 1000 px (text is never scaled down)', () => {
    const widths = Object.fromEntries(Object.entries(FLOWS).map(([name, f]) => [name, layoutFlow(f.schedule, f.rings, f.tasks).width]));
    for (const name of Object.keys(UPWARDS).filter(n => n !== 'fa4_synthetic')) {
      expect(widths[name], name).toBeLessThanOrEqual(440);
    }
    expect(widths.fa4_synthetic).toBeLessThanOrEqual(1000);
  });

  it('draws a merged group as one box around its members, each member a ring of its own', () => {
    const f = FLOWS.gemm_sm100_merged;
    const picked: string[] = [];
    const node = createFlow(f.schedule, f.rings, { tasks: f.tasks, onSelect: r => picked.push(r), selected: 'ab_sync' });
    const group = node.querySelector<SVGElement>('.tslab-flow-group')!;
    expect(group.getAttribute('data-resource')).toBe('ab_sync');
    expect(group.textContent).toContain('ab_sync \u00b7 merged');
    expect([...node.querySelectorAll('.tslab-ring')].map(g => g.getAttribute('data-resource')).sort()).toEqual(['smem_a', 'smem_b', 'tmem_acc', 'work_queue']);
    // the group is picked: so are its members
    expect([...node.querySelectorAll('.tslab-ring-selected')].map(g => g.getAttribute('data-resource')).sort()).toEqual(['ab_sync', 'smem_a', 'smem_b']);
    group.dispatchEvent(new MouseEvent('click'));
    node.querySelector<SVGElement>('.tslab-ring[data-resource="smem_b"]')!.dispatchEvent(new MouseEvent('click'));
    expect(picked).toEqual(['ab_sync', 'smem_b']);
  });

  it('lights the edges of the ring under the mouse', () => {
    const f = FLOWS.gemm_sm100;
    const node = createFlow(f.schedule, f.rings, { tasks: f.tasks });
    const queue = node.querySelector<SVGElement>('.tslab-ring[data-resource="work_queue"]')!;
    queue.dispatchEvent(new MouseEvent('mouseenter'));
    const lit = [...node.querySelectorAll('.tslab-flow-arrow-lit')];
    expect(lit.length).toBe(5); // from the scheduler, to the four tasks that read the queue
    expect(new Set(lit.map(e => e.getAttribute('data-resource')))).toEqual(new Set(['work_queue']));
    queue.dispatchEvent(new MouseEvent('mouseleave'));
    expect(node.querySelectorAll('.tslab-flow-arrow-lit').length).toBe(0);
  });
});
