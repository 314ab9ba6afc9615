import { describe, expect, it } from 'vitest';
import { createSwimlane, guardText, neighbourMove, stageItems, swimlaneRows, type MoveRequest } from '../src/views/swimlane';
import type { ScheduleRow } from '../src/views/types';
import { fixture } from './helpers';

const verdict = fixture('verdict_gemm_sm90.json');

function lanes(node: HTMLElement) {
  return [...node.querySelectorAll<HTMLElement>('.tslab-lane')];
}

function texts(lane: HTMLElement, section: string): string[] {
  return [...lane.querySelectorAll<HTMLElement>(`.tslab-step[data-section="${section}"]`)].map(b =>
    b.textContent
  );
}

describe('the swimlane', () => {
  it('puts every lane in one grid with the head, loop and tail columns, so sections align across tasks', () => {
    const node = createSwimlane(verdict.schedule, { tasks: verdict.tasks });
    const grid = node.querySelector<HTMLElement>('.tslab-swimlane-grid')!;
    expect(grid.getAttribute('style') ?? '').toBe('');  // the columns come from the stylesheet's grid template
    const headings = [...grid.querySelectorAll('.tslab-lane-heading')].map(e => e.textContent);
    expect(headings).toEqual(['task', 'head', 'loop (trip k)', 'tail']);
    for (const lane of lanes(node)) {
      // each lane contributes exactly one cell per column: title, head, loop, tail (display: contents)
      const cells = [...lane.children].map(c => c.className.split(' ').find(n => n.startsWith('tslab-lane-') || n.startsWith('tslab-section-')));
      expect(cells).toEqual(['tslab-lane-title', 'tslab-lane-section', 'tslab-lane-section', 'tslab-lane-section']);
      expect([...lane.querySelectorAll<HTMLElement>('.tslab-lane-section')].map(c => c.dataset.section)).toEqual(['head', 'loop', 'tail']);
    }
  });

  it('titles each lane with its warps and loop trips', () => {
    const node = createSwimlane(verdict.schedule, { tasks: verdict.tasks });
    const titles = lanes(node).map(l => l.querySelector('.tslab-lane-title')!.textContent);
    expect(titles).toEqual(['LoadTaskwarp 4 · loop ×4', 'MmaTaskwarps 0-3 · loop ×3', 'EpilogueTaskwarp 5 · loop ×1']);
  });

  it('shows which item each pipeline step refers to: the MMA waits on k+1 in its loop and releases k', () => {
    const node = createSwimlane(verdict.schedule, { tasks: verdict.tasks });
    const [load, mma] = lanes(node);
    expect(texts(load, 'loop')).toEqual(['gmem_ab k_coords', 'smem_ab acquire k', 'smem_ab tma_load', 'smem_ab commit k']);
    expect(texts(mma, 'head')).toEqual(['smem_ab wait #0', 'smem_ab wgmma_first']);
    expect(texts(mma, 'loop')).toEqual(['smem_ab wait k+1', 'smem_ab wgmma', 'smem_ab wgmma_drain LastIter', 'smem_ab release k']);
    expect(texts(mma, 'tail')[0]).toBe('smem_ab release n');
  });

  it('counts items per counter, with strides for several per trip and try forms with their blocking forms', () => {
    const row = (section: ScheduleRow['section'], index: number, stage: string): ScheduleRow => ({ task: 't', section, index, resource: 'r', stage, label: null, guard: 'Always' });
    const steps = [row('head', 0, 'ConsumerTryWait'), row('loop', 0, 'ConsumerWait'), row('loop', 1, 'ConsumerWait'), row('loop', 2, 'ConsumerRelease'), row('tail', 0, 'ConsumerRelease')];
    const items = stageItems(steps);
    expect(steps.map(s => items.get(s))).toEqual(['#0', '2k+1', '2k+2', 'k', 'n']);
  });

  it('marks on hover what a wait waits on: the commits of its resource in other lanes', () => {
    const node = createSwimlane(verdict.schedule, { tasks: verdict.tasks });
    document.body.appendChild(node);
    const [load, mma] = lanes(node);
    const wait = mma.querySelector<HTMLElement>('.tslab-step[data-section="loop"][data-counter="wait"]')!;
    expect(wait.title).toContain('released by the commits of LoadTask');
    wait.dispatchEvent(new MouseEvent('mouseenter'));
    const marked = [...node.querySelectorAll<HTMLElement>('.tslab-step-dep')];
    expect(marked.length).toBe(1);
    expect(marked[0].closest<HTMLElement>('.tslab-lane')!.dataset.task).toBe('LoadTask');
    expect(marked[0].dataset.counter).toBe('commit');
    wait.dispatchEvent(new MouseEvent('mouseleave'));
    expect(node.querySelectorAll('.tslab-step-dep').length).toBe(0);
    expect(load).toBeTruthy();
    node.remove();
  });

  it('is not draggable without a host, and reorders by Alt+arrows with one', () => {
    expect(createSwimlane(verdict.schedule).querySelector('[draggable]')).toBeNull();
    const moves: MoveRequest[] = [];
    const node = createSwimlane(verdict.schedule, { onMove: m => moves.push(m) });
    const mma = lanes(node)[1];
    const release = mma.querySelector<HTMLElement>('.tslab-step[data-section="loop"][data-counter="release"]')!;
    release.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowLeft', altKey: true, bubbles: true }));
    release.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowLeft', bubbles: true }));  // no Alt: nothing
    expect(moves).toEqual([{ task: 'MmaTask', index: 5, section: 'loop', to_index: 2, resource: 'smem_ab', stage: 'ConsumerRelease', label: null }]);
  });

  it('moves across section borders at a section end, as the schedule editor does', () => {
    const steps = swimlaneRows(verdict.schedule).get('MmaTask')!;
    const firstLoop = steps.find(s => s.section === 'loop' && s.index === 0)!;
    const lastLoop = steps.find(s => s.section === 'loop' && s.index === 3)!;
    const firstHead = steps.find(s => s.section === 'head' && s.index === 0)!;
    expect(neighbourMove(steps, firstLoop, -1)).toEqual({ section: 'head', to_index: 1e6 });
    expect(neighbourMove(steps, lastLoop, 1)).toEqual({ section: 'tail', to_index: 0 });
    expect(neighbourMove(steps, firstHead, -1)).toBeNull();
  });

  it('lets a long name break only after an underscore, never inside a word', () => {
    const node = createSwimlane(verdict.schedule);
    const stage = [...node.querySelectorAll<HTMLElement>('.tslab-step-verb')].find(v => v.textContent === 'stage_accumulators')!;
    expect(stage.innerHTML).toBe('stage_<wbr>accumulators');
    const resource = node.querySelector<HTMLElement>('.tslab-step[data-resource="smem_epi"] .tslab-step-resource')!;
    expect(resource.innerHTML).toBe('smem_<wbr>epi');
  });
});

describe('the swimlane of guarded steps (demo_guards)', () => {
  const guards = fixture('verdict_demo_guards.json');

  it('draws each guard on its block and says in its title when the step runs', () => {
    const store = lanes(createSwimlane(guards.schedule, { tasks: guards.tasks }))[1];
    expect(texts(store, 'loop')).toEqual([
      'ring wait k',
      'ring read',
      'gmem_out store when_true(ring.read.item)',
      'ring release every(2, start=1)',
      'ring release every(2, start=1)'
    ]);
    const [storeStep, release] = [...store.querySelectorAll<HTMLElement>('.tslab-step-guarded')];
    expect(storeStep.dataset.guard).toBe('when_true(ring.read.item)');
    expect(storeStep.title).toContain('only when ring.read.item is true (a runtime value: TS checks both): when_true(ring.read.item)');
    expect(release.title).toContain('StoreTask loop step 3: ring.ConsumerRelease, only on trips 1, 3, 5, ...: every(2, start=1)');
    expect(store.querySelectorAll('.tslab-step-guarded .tslab-step-guard')).toHaveLength(3);
  });

  it('gives no item to the steps of a counter that does not advance on every trip', () => {
    const store = lanes(createSwimlane(guards.schedule))[1];
    const release = store.querySelector<HTMLElement>('.tslab-step[data-counter="release"]')!;
    expect(release.querySelector('.tslab-step-item')).toBeNull();
    expect(release.title).not.toContain('on item');
    const row = (index: number, stage: string, guard: string): ScheduleRow => ({ task: 't', section: 'loop', index, resource: 'r', stage, label: null, guard });
    const steps = [row(0, 'ConsumerWait', 'Always'), row(1, 'ConsumerRelease', 'every(2)'), row(2, 'ConsumerRelease', 'Always')];
    expect(steps.map(s => stageItems(steps).get(s))).toEqual(['k', undefined, undefined]);
  });

  it('says when each kind of guard runs', () => {
    expect(['FirstIter', 'LastIter', 'every(1)', 'every(3)', 'every(2, start=1)', 'when_false(#1)'].map(guardText)).toEqual([
      'on the first trip only',
      'on the last trip only',
      'on every trip',
      'on trips 0, 3, 6, ...',
      'on trips 1, 3, 5, ...',
      'when #1 is false (a runtime value: TS checks both)'
    ]);
  });
});
