// The memory map's scale and labels, on recorded verdicts: round ticks, the capacity marked, no label cut off.
import { describe, expect, it } from 'vitest';
import { axisFor, createLayoutMap, niceStep, summaryText } from '../src/views/layout';
import { fixture } from './helpers';

const ticks = (node: Element) => [...node.querySelectorAll('.tslab-tick')].map(t => t.textContent);

describe('memory map scale', () => {
  it('steps by 1, 2 or 5 times a power of ten', () => {
    expect([niceStep(232448), niceStep(1088), niceStep(512), niceStep(7)]).toEqual([100000, 500, 200, 2]);
  });

  it('ends at a round number past the capacity when the usage is a fair share of it (gemm_sm90)', () => {
    const v = fixture('verdict_gemm_sm90.json');
    const node = createLayoutMap(v.layout, v.memory, { summary: false });
    expect(ticks(node)).toEqual(['0', '100,000', '200,000', '300,000 B']); // not "0 .. 244,070 B"
    const line = node.querySelector('.tslab-capacity')!;
    const width = Number(node.querySelector('svg')!.getAttribute('width'));
    expect(Number(line.getAttribute('x1'))).toBeGreaterThan(0);
    expect(Number(line.getAttribute('x1'))).toBeLessThan(width);
  });

  it('keeps the scale at the capacity whatever the usage, so an edit never rescales the map', () => {
    // a 1 KiB ring in 227 KiB, a 1-stage ring (16,400 B) and a 4-stage one: one axis, the capacity line at one place
    expect(axisFor(232448, 1088)).toEqual({ max: 300000, ticks: [0, 100000, 200000, 300000] });
    expect(axisFor(232448, 16400)).toEqual(axisFor(232448, 65600));
    const small = createLayoutMap(fixture('verdict_demo_deadlock.json').layout, fixture('verdict_demo_deadlock.json').memory, {});
    const v = fixture('verdict_gemm_sm90.json');
    const large = createLayoutMap(v.layout, v.memory, {});
    expect(ticks(small)).toEqual(['0', '100,000', '200,000', '300,000 B']);
    expect(ticks(small)).toEqual(ticks(large));
    // the capacity line at one place along the axis (the label column before it is each design's own)
    const at = (node: Element) => {
      const tickX = [...node.querySelectorAll('.tslab-tick')].map(t => Number(t.getAttribute('x')));
      const cx = Number(node.querySelector('.tslab-capacity')!.getAttribute('x1'));
      return ((cx - tickX[0]) / (tickX[tickX.length - 1] - tickX[0])).toFixed(4);
    };
    expect(at(small)).toBe(at(large));
    // the smaller ring draws shorter
    const end = (node: Element) => Math.max(...[...node.querySelectorAll('rect.tslab-alloc')].map(r =>
      Number(r.getAttribute('x')) + Number(r.getAttribute('width'))));
    expect(end(small)).toBeLessThan(end(large));
  });

  it('keeps every label whole, or cut with an ellipsis and whole in its tooltip, inside the drawing', () => {
    const v = fixture('verdict_gemm_sm90.json');
    for (const width of [380, 540, 770]) {
      const node = createLayoutMap(v.layout, v.memory, { width });
      for (const label of node.querySelectorAll('.tslab-map-label')) {
        const whole = label.querySelector('title')!.textContent!;
        const shown = label.firstChild!.textContent!;
        const x = Number(label.getAttribute('x'));
        expect(shown.length * 6.7).toBeLessThanOrEqual(x + 1); // the text, right-aligned at x, starts inside the svg
        expect(shown === whole || (shown.endsWith('\u2026') && whole.startsWith(shown.slice(0, -1)))).toBe(true);
      }
    }
  });
});

describe('TMEM beside SMEM', () => {
  const maps = (node: Element) => [...node.querySelectorAll('svg.tslab-map')];
  const spaces = (node: Element) => [...node.querySelectorAll('.tslab-map-space')].map(t => t.textContent);

  it('draws a second map in columns, ticked every 128 up to the 512 of the capacity line (attention_tmem)', () => {
    const v = fixture('verdict_attention_tmem.json');
    const node = createLayoutMap(v.layout, v.memory, {});
    expect(maps(node)).toHaveLength(2);
    expect(spaces(node)).toEqual(['SMEM: 64 / 232,448 bytes', 'TMEM: 256 / 512 columns of 128 lanes, 64 saved by aliasing']);
    const tmem = maps(node)[1];
    expect(ticks(tmem)).toEqual(['0', '128', '256', '384', '512 columns']);
    expect(tmem.querySelector('.tslab-capacity-label')!.textContent).toBe('capacity 512');
    expect(node.querySelector('.tslab-map-summary')!.textContent).toContain('TMEM 256 / 512 columns (alias savings 64 columns)');
    expect(node.querySelector('.tslab-map-legend')!.textContent).toContain('columns (TMEM)');
  });

  it('puts the aliased phases of a TMEM group at the same columns, one colour each (P over S)', () => {
    const v = fixture('verdict_attention_tmem.json');
    const tmem = maps(createLayoutMap(v.layout, v.memory, {}))[1];
    const bar = (name: string) => tmem.querySelector(`rect[data-name="${name}"]`)!;
    expect(bar('s').getAttribute('x')).toBe(bar('p').getAttribute('x'));
    expect(bar('s').getAttribute('fill')).not.toBe(bar('p').getAttribute('fill'));
    expect(Number(bar('p').getAttribute('width'))).toBeCloseTo(Number(bar('s').getAttribute('width')) / 2, 5);
    expect(bar('o').getAttribute('class')).toBe('tslab-alloc');
    expect(summaryText(v.memory, v.layout.filter((a: any) => a.space === 'tmem'))).toContain('(alias savings 64 columns)');
  });

  it('shades what does not fit past the capacity and marks the summary (gemm_sm100 with 3 accumulator stages)', () => {
    const v = fixture('verdict_gemm_sm100_over.json');
    expect(v.memory.tmem_used).toBe(768);
    const node = createLayoutMap(v.layout, v.memory, {});
    const tmem = maps(node)[1];
    expect(ticks(tmem)).toEqual(['0', '128', '256', '384', '512', '640', '768 columns']);
    const over = tmem.querySelector('.tslab-over-capacity')!;
    const line = tmem.querySelector('.tslab-capacity')!;
    expect(over.getAttribute('x')).toBe(line.getAttribute('x1'));
    expect(over.querySelector('title')!.textContent).toBe('256 columns past the capacity of 512 columns');
    expect(maps(node)[0].querySelector('.tslab-over-capacity')).toBeNull(); // SMEM fits
    const summary = node.querySelector('.tslab-map-summary')!;
    expect(summary.classList.contains('tslab-over')).toBe(true);
    expect(summary.textContent).toContain('TMEM 768 / 512 columns, 256 over');
  });

  it('keeps one unlabelled map for a design without TMEM', () => {
    const v = fixture('verdict_gemm_sm90.json');
    const node = createLayoutMap(v.layout, v.memory, {});
    expect(maps(node)).toHaveLength(1);
    expect(spaces(node)).toEqual([]);
  });
});
