// Each renderer draws a recorded payload from the saved output alone: no kernel, no widget manager.
import { describe, expect, it, vi } from 'vitest';
import { OPEN_DESIGN_EVENT } from '../src/views/design';
import { MIME_TYPE as DESIGN, RenderedDesign } from '../src/renderers/design';
import { MIME_TYPE as TIMELINE, RenderedTimeline } from '../src/renderers/timeline';
import { MIME_TYPE as TRACE, RenderedTrace } from '../src/renderers/trace';
import { MIME_TYPE as VERDICT, RenderedVerdict } from '../src/renderers/verdict';
import { fixture, key, mimeModel } from './helpers';

async function render<T extends { renderModel(m: any): Promise<void>; node: HTMLElement }>(r: T, mime: string, payload: unknown, text?: string): Promise<HTMLElement> {
  await r.renderModel(mimeModel(mime, payload, text));
  document.body.appendChild(r.node);
  return r.node;
}

describe('trace renderer: the replay player', () => {
  it('steps the demo_deadlock trace with the arrow keys and highlights the deadlock step', async () => {
    const node = await render(new RenderedTrace({ mimeType: TRACE, sanitizer: {} as any, resolver: null, linkHandler: null, latexTypesetter: null }), TRACE, fixture('trace_demo_deadlock.json'));
    const player = node.querySelector<HTMLElement>('.tslab-player')!;
    const caption = () => node.querySelector('.tslab-player-caption')!.textContent;
    expect(caption()).toBe('step 0: initial state of demo_deadlock');
    for (let i = 0; i < 4; i++) {
      key(player, 'ArrowRight');
    }
    expect(caption()).toBe('step 4: LoadTask ran ProducerAcquire(smem_ring) (loop[1] iter 0)');
    expect(player.classList.contains('tslab-at-fault')).toBe(false);
    key(player, 'End');
    expect(caption()).toContain('DEADLOCK: LoadTask blocked on smem_ring.ProducerAcquire');
    expect(player.classList.contains('tslab-at-fault')).toBe(true);
    expect(node.querySelectorAll('.tslab-fault-step')).toHaveLength(1);
    const marks = [...node.querySelectorAll('.tslab-fault-mark title')].map(t => t.textContent!);
    expect(marks).toHaveLength(2);
    expect(marks[0]).toMatch(/^blocked: ProducerAcquire: LoadTask blocked on smem_ring/);
    expect(marks[1]).toMatch(/^blocked: ConsumerWait: /);
    key(player, 'ArrowLeft');
    expect(caption()).toMatch(new RegExp(`^step ${fixture('trace_demo_deadlock.json').steps.length - 2}: `));
    key(player, 'Home');
    expect(caption()).toMatch(/^step 0: /);
  });

  it('shows credits and held slots per step (demo_race)', async () => {
    const trace = fixture('trace_demo_race.json');
    const node = await render(new RenderedTrace({ mimeType: TRACE } as any), TRACE, trace);
    const slider = node.querySelector<HTMLInputElement>('input[type=range]')!;
    expect(Number(slider.max)).toBe(trace.steps.length - 1);
    const withHeld = trace.steps.findIndex((s: any) => Object.values(s.state.held).some((e: any) => e.length));
    slider.value = String(withHeld);
    slider.dispatchEvent(new Event('input'));
    const [res, entries] = Object.entries(trace.steps[withHeld].state.held).find(([, e]: any) => e.length) as [string, any[]];
    expect(node.querySelector('.tslab-held')!.textContent).toContain(`${res}: ${entries[0][0]} by ${entries[0][1]} (slot ${entries[0][2]})`);
    // The PDL flag and the cursors are two labelled lines, not one run-on phrase ("PDL wait done: no cursors").
    const cursors = trace.steps[withHeld].state.cursors.join(', ');
    expect(node.querySelector('.tslab-cursors')!.textContent).toBe(`cursors: (${cursors})`);
    expect(node.querySelector('.tslab-pdl')!.textContent).toMatch(/^PDL wait done: (yes|no)$/);
    const stages = Object.keys(trace.steps[withHeld].state.prod_credits);
    expect([...node.querySelectorAll('.tslab-credits code')].map(c => c.textContent)).toEqual(stages);
    node.querySelector<HTMLButtonElement>('[aria-label="last step"]')!.click();
    expect(node.querySelector('.tslab-fault-message')!.textContent).toMatch(/^RACE: /);
  });

  it('names the guard that let a step run (demo_guards run to completion)', async () => {
    const trace = fixture('trace_demo_guards.json');
    const node = await render(new RenderedTrace({ mimeType: TRACE } as any), TRACE, trace);
    const release = trace.steps.findIndex((s: any) => s.op?.stage === 'ConsumerRelease');
    const slider = node.querySelector<HTMLInputElement>('input[type=range]')!;
    slider.value = String(release);
    slider.dispatchEvent(new Event('input'));
    expect(node.querySelector('.tslab-player-caption')!.textContent).toBe(
      `step ${release}: StoreTask ran ConsumerRelease(ring) (loop[3] iter 1 [every(2, start=1)])`
    );
  });

  it('plays to the end and stops', async () => {
    vi.useFakeTimers();
    const node = await render(new RenderedTrace({ mimeType: TRACE } as any), TRACE, fixture('trace_demo_deadlock.json'));
    node.querySelector<HTMLButtonElement>('.tslab-play')!.click();
    vi.advanceTimersByTime(600 * 3);
    expect(node.querySelector('.tslab-player-caption')!.textContent).toMatch(/^step 3: /);
    vi.advanceTimersByTime(600 * 50);
    expect(node.querySelector('.tslab-player')!.classList.contains('tslab-at-fault')).toBe(true);
    expect(node.querySelector('.tslab-play')!.getAttribute('aria-label')).toBe('play');
    vi.useRealTimers();
  });

  it('redraws only when the payload changed, and degrades to the text fallback', async () => {
    const r = new RenderedTrace({ mimeType: TRACE } as any);
    const node = await render(r, TRACE, fixture('trace_demo_deadlock.json'));
    const first = node.firstChild;
    await r.renderModel(mimeModel(TRACE, fixture('trace_demo_deadlock.json')));
    expect(node.firstChild).toBe(first);
    await r.renderModel(mimeModel(TRACE, { tslab_trace: 1, steps: [] }, 'demo: DEADLOCK after 7 steps'));
    expect(node.querySelector('pre.tslab-fallback')!.textContent).toBe('demo: DEADLOCK after 7 steps');
  });
});

describe('verdict renderer', () => {
  it('draws the gemm_sm90 memory map with aliased phases, the capacity line and the swimlane', async () => {
    const v = fixture('verdict_gemm_sm90.json');
    const node = await render(new RenderedVerdict({ mimeType: VERDICT } as any), VERDICT, v);
    expect(node.querySelector('.tslab-badge')!.textContent).toBe('SAFE');
    expect(node.querySelector('.tslab-map-summary')!.textContent).toBe(
      'SMEM 131,152 / 232,448 B (131,072 data + 80 barriers); alias savings 32,768 B (20.0%)'
    );
    const aliased = [...node.querySelectorAll('.tslab-aliased')].map(r => [r.getAttribute('data-name'), r.getAttribute('fill')]);
    expect(aliased).toEqual([
      ['a_buf', '#f58518'],
      ['b_buf', '#f58518'],
      ['epi_buf', '#54a24b']
    ]);
    expect(node.querySelector('.tslab-capacity-label')!.textContent).toBe('capacity 232,448');
    const lanes = [...node.querySelectorAll<HTMLElement>('.tslab-lane')].map(l => [l.dataset.task, l.querySelectorAll('.tslab-step').length]);
    expect(lanes).toEqual([
      ['LoadTask', 4],
      ['MmaTask', 10],
      ['EpilogueTask', 4]
    ]);
    expect(node.querySelector('.tslab-player')).toBeNull();
  });

  it('shows a deadlock verdict with its errors, hints and counterexample player', async () => {
    const node = await render(new RenderedVerdict({ mimeType: VERDICT } as any), VERDICT, fixture('verdict_demo_deadlock.json'));
    expect(node.querySelector('.tslab-badge')!.textContent).toBe('DEADLOCK');
    expect(node.querySelector('.tslab-errors')!.textContent).toContain('deadlock at');
    expect(node.querySelector('.tslab-hint')!.textContent).toBe('hint: give the ring more stages, or release each stage before waiting for the next');
    expect(node.querySelector('.tslab-player')).not.toBeNull();
  });
});

describe('design renderer', () => {
  it('opens a design file (text) with its saved verdict and asks to open a notebook', async () => {
    const text = JSON.stringify(fixture('design_gemm_sm90.tslab.json'));
    const node = await render(new RenderedDesign({ mimeType: DESIGN } as any), DESIGN, text);
    expect(node.querySelector('.tslab-kernel')!.textContent).toBe('gemm_sm90');
    expect(node.querySelector('.tslab-kv')!.textContent).toContain('stages3');
    expect(node.querySelector('.tslab-saved-verdict .tslab-badge')!.textContent).toBe('SAFE');
    const heard: any[] = [];
    document.addEventListener(OPEN_DESIGN_EVENT, e => heard.push((e as CustomEvent).detail), { once: true });
    node.querySelector<HTMLButtonElement>('.tslab-open-notebook')!.click();
    expect(heard[0].design.kernel).toBe('gemm_sm90');
  });
});

describe('design renderer, captured designs', () => {
  it('says where a captured design comes from, its arguments as the Python that makes them', async () => {
    const f16 = (rows: number, stride?: number[]) => ({ tensor: 'Float16', shape: [rows, 256], stride: stride ?? [256, 1] });
    const captured = {
      tslab_design: 1, kernel: 'ring_copy', params: {}, pipelines: {}, schedules: {}, alias_groups: null,
      source: {
        arch: 'sm_90a', index: 0, args: [f16(8), f16(8, [1, 8]), { stream: true }, 3, { tuple: [2, { dtype: 'Float16' }] }],
        kwargs: { tile: 'wide', runtime: { tensor: 'Int32', shape: [null], stride: [1] } }, file: 'ring_copy.py', function: 'ring_copy'
      },
      knobs: { STRIP: 128, MODE: 'fast' }
    };
    const node = await render(new RenderedDesign({ mimeType: DESIGN } as any), DESIGN, captured);
    expect(node.querySelector('.tslab-source')!.textContent).toBe(
      "captured from ring_copy.py::ring_copy with (fake.tensor('Float16', (8, 256)), fake.tensor('Float16', (8, 256), stride=(1, 8)), " +
        "fake.stream(), 3, (2, cutlass.Float16), tile='wide', runtime=fake.tensor('Int32', (None,))) for sm_90a"
    );
    expect(node.textContent).not.toContain('[object Object]');
    expect(node.querySelector('.tslab-overrides')!.textContent).toBe("knob STRIP = 128knob MODE = 'fast'");
  });

  it('writes parameters and edits as Python, not JSON', async () => {
    const design = {
      tslab_design: 1, kernel: 'gemm_sm90', params: { dtype: 'fp16', swap_ab: true, cluster: null, tile_n: 128 },
      pipelines: { smem_ab: { num_stages: 4, advance_on_wait: false } }, schedules: {}, alias_groups: [[['a_buf'], ['epi_buf']]]
    };
    const node = await render(new RenderedDesign({ mimeType: DESIGN } as any), DESIGN, design);
    expect([...node.querySelectorAll('.tslab-kv td')].map(td => td.textContent)).toEqual(["'fp16'", 'True', 'None', '128']);
    expect(node.querySelector('.tslab-overrides')!.textContent).toBe("pipeline smem_ab: num_stages=4, advance_on_wait=Falsealias groups: [[['a_buf'], ['epi_buf']]]");
  });
});

describe('timeline renderer: a profiled kernel, warp by warp', () => {
  const payload = () => fixture('timeline_gemm_sm90.json');
  const renderTimeline = () => render(new RenderedTimeline({ mimeType: TIMELINE } as any), TIMELINE, payload());

  it('draws one lane per warp, grouped by task, with every step a slice', async () => {
    const node = await renderTimeline();
    const t = payload();
    const warps = t.tasks.reduce((n: number, task: any) => n + task.warps.length, 0);
    expect([...node.querySelectorAll('.tslab-timeline-task')].map(e => e.textContent)).toEqual(t.tasks.map((x: any) => x.name));
    expect(node.querySelectorAll('.tslab-lane-label')).toHaveLength(warps);
    expect(node.querySelectorAll('.tslab-slice')).toHaveLength(t.ranges.length);
    expect(node.querySelector('.tslab-timeline-title')!.textContent).toContain(`gemm_sm90: ${t.ranges.length} steps of ${warps} warps`);
    expect(node.querySelectorAll('.tslab-timeline-reading li')).toHaveLength(t.reading.length);
    // the MMA warps' waits overlap their own wgmma: hatched apart from the stalls
    expect(node.querySelectorAll('.tslab-kind-overlapped').length).toBeGreaterThan(0);
    expect(node.querySelectorAll('.tslab-kind-wait').length).toBeGreaterThan(0);
  });

  it('names the step under the pointer, zooms and pans with the keyboard', async () => {
    const node = await renderTimeline();
    const slice = node.querySelector<SVGElement>('.tslab-slice')!;
    slice.dispatchEvent(new Event('mouseenter'));
    expect(node.querySelector('.tslab-timeline-detail')!.textContent).toMatch(/^\w+Task warp \d+: \w+\(\w+\) (head|loop|tail)\[\d+\]/);
    const frame = node.querySelector<HTMLElement>('.tslab-timeline')!;
    const window = () => node.querySelector('.tslab-timeline-window')!.textContent;
    const all = window();
    const slices = node.querySelectorAll('.tslab-slice').length;
    key(frame, '+');
    key(frame, '+');
    expect(window()).not.toBe(all);
    expect(node.querySelectorAll('.tslab-slice').length).toBeLessThan(slices);
    key(frame, 'ArrowRight');
    key(frame, '0');
    expect(window()).toBe(all);
    node.querySelector<HTMLButtonElement>('[aria-label="zoom in"]')!.click();
    expect(window()).not.toBe(all);
    node.querySelector<HTMLButtonElement>('[aria-label="show all"]')!.click();
    expect(window()).toBe(all);
  });

  it('falls back to the text of the output for a payload it cannot draw', async () => {
    const node = await render(new RenderedTimeline({ mimeType: TIMELINE } as any), TIMELINE, { tslab_timeline: 1 }, 'gemm_sm90: 510 ranges');
    expect(node.querySelector('.tslab-fallback')!.textContent).toBe('gemm_sm90: 510 ranges');
  });
});
