// One renderer, two hosts: the live widget (anywidget front end) and the saved output's mime renderer draw the
// same player for the same trace, and the widget keeps its model's step in sync both ways.
import { describe, expect, it } from 'vitest';
import { MIME_TYPE, RenderedTrace } from '../src/renderers/trace';
import widget, { TraceViewModel } from '../src/widgets/player';
import { fixture, key, mimeModel } from './helpers';

function fakeModel(state: Record<string, any>): TraceViewModel & { saved: number; emit(name: string): void } {
  const listeners: Record<string, (() => void)[]> = {};
  return {
    saved: 0,
    get: (name: string) => state[name],
    set: (name: string, value: any) => {
      state[name] = value;
    },
    save_changes() {
      this.saved++;
    },
    on: (event: string, cb: () => void) => {
      (listeners[event] ??= []).push(cb);
    },
    off: (event: string, cb: () => void) => {
      listeners[event] = (listeners[event] ?? []).filter(f => f !== cb);
    },
    emit: (name: string) => (listeners[`change:${name}`] ?? []).forEach(f => f())
  } as any;
}

describe('the widget host', () => {
  it.each(['trace_demo_deadlock.json', 'trace_demo_race.json'])('draws the same DOM as the mime renderer (%s)', async name => {
    const trace = fixture(name);
    const saved = new RenderedTrace({ mimeType: MIME_TYPE } as any);
    await saved.renderModel(mimeModel(MIME_TYPE, trace));
    const el = document.createElement('div');
    widget.render({ model: fakeModel({ trace, index: 0 }), el });
    expect(el.querySelector('.tslab-player')!.outerHTML).toBe(saved.node.querySelector('.tslab-player')!.outerHTML);
    expect(el.classList.contains('tslab-rendered')).toBe(true);
  });

  it('tells the model each step and follows the model', () => {
    const model = fakeModel({ trace: fixture('trace_demo_deadlock.json'), index: 0 });
    const el = document.createElement('div');
    const cleanup = widget.render({ model, el });
    const player = el.querySelector<HTMLElement>('.tslab-player')!;
    key(player, 'ArrowRight');
    key(player, 'ArrowRight');
    expect(model.get('index')).toBe(2);
    expect(model.saved).toBe(2);
    model.set('index', 5);
    model.emit('index');
    expect(el.querySelector('.tslab-player-caption')!.textContent).toMatch(/^step 5: /);
    expect(model.saved).toBe(2); // no echo back to the model
    model.set('index', 0);
    model.emit('trace'); // a new trace (the Explorer moved): redrawn at the model's step
    expect(el.querySelector('.tslab-player-caption')!.textContent).toBe('step 0: initial state of demo_deadlock');
    cleanup();
  });
});

describe('the swimlane widget host', () => {
  it('draws the same swimlane as the verdict renderer and follows its model', async () => {
    const { default: swimlane } = await import('../src/widgets/swimlane');
    const { RenderedVerdict, MIME_TYPE: VERDICT } = await import('../src/renderers/verdict');
    const verdict = fixture('verdict_gemm_sm90.json');
    const saved = new RenderedVerdict({ mimeType: VERDICT } as any);
    await saved.renderModel(mimeModel(VERDICT, verdict));
    const model = fakeModel({ schedule: verdict.schedule, tasks: verdict.tasks, editable: false, version: 1 });
    const el = document.createElement('div');
    swimlane.render({ model, el });
    expect(el.querySelector('.tslab-swimlane')!.outerHTML).toBe(saved.node.querySelector('.tslab-swimlane')!.outerHTML);
    model.set('schedule' as any, []);
    model.emit('schedule');
    expect(el.textContent).toContain('no schedule');
  });
});

describe('the memory map widget host', () => {
  it('draws the same map as the verdict renderer, and redraws on a new verdict', async () => {
    const { default: layout } = await import('../src/widgets/layout');
    const { RenderedVerdict, MIME_TYPE: VERDICT } = await import('../src/renderers/verdict');
    const verdict = fixture('verdict_gemm_sm90.json');
    const saved = new RenderedVerdict({ mimeType: VERDICT } as any);
    await saved.renderModel(mimeModel(VERDICT, verdict));
    const model = fakeModel({ allocations: verdict.layout, memory: verdict.memory, heading: '', map_width: 770 });
    const el = document.createElement('div');
    layout.render({ model, el });
    expect(el.querySelector('.tslab-layout')!.outerHTML).toBe(saved.node.querySelector('.tslab-layout')!.outerHTML);
    model.set('heading' as any, 'with aliasing');
    model.emit('heading');
    expect(el.querySelector('.tslab-map-title')!.textContent).toBe('with aliasing: 131,152 / 232,448 B');
  });

  it('leaves the summary line to a host that prints its own (the Studio printed it twice)', async () => {
    const { default: layout } = await import('../src/widgets/layout');
    const verdict = fixture('verdict_gemm_sm90.json');
    const model = fakeModel({ allocations: verdict.layout, memory: verdict.memory, heading: '', map_width: 770, summary: false });
    const el = document.createElement('div');
    layout.render({ model, el });
    expect(el.querySelector('.tslab-map-summary')).toBeNull();
    expect(el.querySelector('.tslab-map-title')).toBeNull();
    expect(el.querySelectorAll('svg.tslab-map rect').length).toBeGreaterThan(0); // the map itself is still drawn
  });
});
