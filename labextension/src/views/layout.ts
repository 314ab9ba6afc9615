/**
 * The memory map of a verdict: one bar per SMEM allocation at its byte offset, aliased phases in their own
 * colours at the same offsets, the pipeline barriers, the capacity line; beside it, when the design has TMEM, a
 * second map of its TMEM allocations over their columns (128 lanes each, 512 columns), aliased phases alike.
 * What does not fit is shaded past the capacity line. TS's allocators computed the layout; nothing is
 * recomputed here.
 */

import { FAULT_COLOUR, h, num, s } from './dom';
import type { Allocation, Memory } from './types';

export const PLAIN = '#4c78a8';
export const BARRIER = '#9d755d';
export const PHASE_COLOURS = ['#f58518', '#54a24b', '#b279a2', '#e45756', '#72b7b2', '#eeca3b'];

export function allocationColour(a: Allocation): string {
  if (a.space === 'barrier') {
    return BARRIER;
  }
  return a.phase === null ? PLAIN : PHASE_COLOURS[a.phase % PHASE_COLOURS.length];
}

export function allocationLabel(a: Allocation): string {
  return a.phase === null ? a.name : `${a.name} (g${a.alias_group} p${a.phase})`;
}

/** TMEM columns its alias groups save: the TMEM allocations' columns minus what TS's allocator laid out. */
export function tmemSavings(tmem: Allocation[], m: Memory): number {
  return tmem.reduce((sum, a) => sum + a.size, 0) - m.tmem_used;
}

/** One line: used / capacity and what aliasing saves (the Python LayoutChart's summary line); `tmem` are the
 * layout's TMEM rows. */
export function summaryText(m: Memory, tmem: Allocation[] = []): string {
  const unaliased = m.smem_data + m.alias_savings;
  const pct = unaliased ? Math.round((1000 * m.alias_savings) / unaliased) / 10 : 0;
  let text =
    `SMEM ${num(m.smem_used)} / ${num(m.smem_capacity)} B (${num(m.smem_data)} data + ${num(m.barrier_bytes)} barriers); ` +
    `alias savings ${num(m.alias_savings)} B (${pct.toFixed(1)}%)`;
  if (tmem.length) {
    text += `; TMEM ${m.tmem_used} / ${m.tmem_capacity} columns`;
    const saved = tmemSavings(tmem, m);
    if (saved) {
      text += ` (alias savings ${saved} columns)`;
    }
    if (m.tmem_used > m.tmem_capacity) {
      text += `, ${m.tmem_used - m.tmem_capacity} over`;
    }
  }
  return text;
}

/** Columns per TMEM tick: a quarter of the 512 columns (the map then reads 0, 128, 256, 384, 512). */
export const TMEM_STEP = 128;

const ROW = 22;
/** Pixels per character of a map label (11 px monospace), and the most of a map's width labels may take. */
const CHAR_PX = 6.7;
const LABEL_SHARE = 0.45;

/** A round step for an axis up to `reach`: 1, 2 or 5 times a power of ten, giving about `count` intervals. */
export function niceStep(reach: number, count = 4): number {
  const raw = Math.max(reach, 1) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const m = raw / power;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * power;
}

export interface Axis {
  /** The axis' end: a round number at or past what it shows. */
  max: number;
  /** Round tick values from 0 to `max`. */
  ticks: number[];
}

/** The scale of a map: always up to the arch's capacity (or the usage past it), so that an edit never rescales
 * the map and a smaller ring always draws shorter; a tiny usage draws as a sliver beside the capacity line.
 * `step`, where given, spaces the ticks (TMEM: 128 columns). */
export function axisFor(capacity: number, used: number, step?: number): Axis {
  const reach = Math.max(capacity, used, 1);
  step = step ?? niceStep(reach);
  const max = Math.ceil(reach / step) * step;
  const ticks = Array.from({ length: Math.round(max / step) + 1 }, (_, i) => i * step);
  return { max, ticks };
}

/** Which of the ticks at `xs` get a label (about `CHAR_PX` a character) without touching a neighbour's: the
 * first and the last always, the ones between where they fit. */
export function labelledTicks(xs: number[], texts: string[], gap = 8): boolean[] {
  const half = (i: number) => (texts[i].length * CHAR_PX) / 2;
  const left = (i: number) => (i === 0 ? xs[i] : i === xs.length - 1 ? xs[i] - 2 * half(i) : xs[i] - half(i));
  const right = (i: number) => (i === 0 ? xs[i] + 2 * half(i) : i === xs.length - 1 ? xs[i] : xs[i] + half(i));
  const keep = xs.map((_, i) => i === 0 || i === xs.length - 1);
  let edge = xs.length ? right(0) : 0;
  for (let i = 1; i < xs.length - 1; i++) {
    if (left(i) >= edge + gap && right(i) + gap <= left(xs.length - 1)) {
      keep[i] = true;
      edge = right(i);
    }
  }
  if (xs.length > 1 && left(xs.length - 1) < right(0) + gap) {
    keep[0] = false;  // too narrow for both ends: the end, with its unit, is the one kept
  }
  return keep;
}

/** `text` cut to `chars` characters with an ellipsis (the whole label stays in its tooltip). */
function fit(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, Math.max(1, chars - 1))}\u2026`;
}

function chart(rows: Allocation[], capacity: number, used: number, unit: string, total: number, step?: number): SVGElement {
  const labels = rows.map(allocationLabel);
  const longest = Math.max(...labels.map(l => l.length), 4);
  const LABEL = Math.round(Math.min(longest * CHAR_PX + 12, total * LABEL_SHARE));
  const chars = Math.floor((LABEL - 12) / CHAR_PX);
  const WIDTH = total - LABEL - 16;
  const top = 16;
  const height = top + ROW * rows.length + 22;
  const axis = axisFor(capacity, used, step);
  const x = (v: number) => LABEL + (WIDTH * Math.min(v, axis.max)) / axis.max;
  const svg = s('svg', { class: 'tslab-map', width: total, height, viewBox: `0 0 ${total} ${height}`, role: 'img' });
  rows.forEach((a, i) => {
    const y = top + i * ROW;
    svg.appendChild(
      s('text', { x: LABEL - 6, y: y + 15, 'text-anchor': 'end', class: 'tslab-map-label' }, fit(labels[i], chars), s('title', {}, labels[i]))
    );
    svg.appendChild(
      s(
        'rect',
        {
          x: x(a.offset),
          y: y + 3,
          width: Math.max(1, x(a.end) - x(a.offset)),
          height: ROW - 6,
          fill: allocationColour(a),
          class: a.phase === null ? 'tslab-alloc' : 'tslab-alloc tslab-aliased',
          'data-name': a.name
        },
        s(
          'title',
          {},
          `${a.name}: size ${num(a.size)} ${unit}, alignment ${a.alignment}, offset ${num(a.offset)} .. ${num(a.end)}` +
            (a.phase === null ? '' : `, alias group ${a.alias_group}, phase ${a.phase}`)
        )
      )
    );
  });
  if (used > capacity) {
    // what does not fit: shaded from the capacity line to the end of the usage
    svg.appendChild(
      s(
        'rect',
        { x: x(capacity), y: top, width: Math.max(1, x(used) - x(capacity)), height: ROW * rows.length, fill: FAULT_COLOUR, 'fill-opacity': 0.15, class: 'tslab-over-capacity' },
        s('title', {}, `${num(used - capacity)} ${unit} past the capacity of ${num(capacity)} ${unit}`)
      )
    );
  }
  const cx = x(capacity);
  svg.appendChild(s('line', { x1: cx, x2: cx, y1: 4, y2: height - 20, stroke: FAULT_COLOUR, 'stroke-dasharray': '5,3', class: 'tslab-capacity' }));
  svg.appendChild(s('text', { x: cx, y: 11, 'text-anchor': 'end', fill: FAULT_COLOUR, class: 'tslab-capacity-label' }, `capacity ${num(capacity)}`));
  svg.appendChild(s('line', { x1: LABEL, x2: LABEL + WIDTH, y1: height - 18, y2: height - 18, stroke: '#8c959f' }));
  const tickTexts = axis.ticks.map((t, i) => (i === axis.ticks.length - 1 ? `${num(t)} ${unit}` : num(t)));
  const labelled = labelledTicks(axis.ticks.map(x), tickTexts);
  axis.ticks.forEach((t, i) => {
    const last = i === axis.ticks.length - 1;
    const anchor = i === 0 ? 'start' : last ? 'end' : 'middle';
    svg.appendChild(s('line', { x1: x(t), x2: x(t), y1: height - 18, y2: height - 14, stroke: '#8c959f' }));
    if (labelled[i]) {
      svg.appendChild(s('text', { x: x(t), y: height - 4, 'text-anchor': anchor, class: 'tslab-tick' }, tickTexts[i]));
    }
  });
  return svg;
}

export interface LayoutOptions {
  /** A heading above the map ("with aliasing", ...), followed by used / capacity. */
  title?: string;
  /** Width of each map in pixels. */
  width?: number;
  /** The summary line above the map (default true; a host that prints its own passes false). */
  summary?: boolean;
}

/** The SMEM map, and the TMEM map beside it when the design has TMEM, with their summary line. */
export function createLayoutMap(layout: Allocation[], memory: Memory, options: LayoutOptions = {}): HTMLElement {
  const smem = layout.filter(a => a.space !== 'tmem');
  const tmem = layout.filter(a => a.space === 'tmem');
  const fits = memory.smem_used <= memory.smem_capacity && memory.tmem_used <= memory.tmem_capacity;
  const width = options.width ?? 770;
  const heading = (text: string) => (tmem.length ? h('div', { class: 'tslab-map-space' }, text) : null);
  return h(
    'div',
    { class: 'tslab-layout' },
    options.title ? h('div', { class: 'tslab-map-title' }, `${options.title}: ${num(memory.smem_used)} / ${num(memory.smem_capacity)} B`) : null,
    options.summary === false
      ? null
      : h('div', { class: fits ? 'tslab-map-summary' : 'tslab-map-summary tslab-over' }, summaryText(memory, tmem)),
    smem.length ? heading(`SMEM: ${num(memory.smem_used)} / ${num(memory.smem_capacity)} bytes`) : null,
    smem.length
      ? chart(smem, memory.smem_capacity, memory.smem_used, 'B', width)
      : tmem.length
        ? null
        : h('i', {}, 'no layout (the design could not be lowered)'),
    tmem.length ? heading(`TMEM: ${memory.tmem_used} / ${memory.tmem_capacity} columns of 128 lanes` + (tmemSavings(tmem, memory) ? `, ${tmemSavings(tmem, memory)} saved by aliasing` : '')) : null,
    tmem.length ? chart(tmem, memory.tmem_capacity, memory.tmem_used, 'columns', width, TMEM_STEP) : null,
    layout.some(a => a.phase !== null)
      ? h('div', { class: 'tslab-map-legend' }, '(gN pM): alias group N, phase M; one colour per phase, and the phases of a group share their bytes (SMEM) or columns (TMEM)')
      : null
  );
}

/** The maps drawn at the width their box gets in the page (at most `options.width`, 770 px by default), and drawn
 * again when that width changes: a saved verdict's map then never shrinks its text to fit a narrow output. */
export function createFittedLayoutMap(layout: Allocation[], memory: Memory, options: LayoutOptions = {}): { node: HTMLElement; dispose(): void } {
  const box = h('div', { class: 'tslab-layout-fit' });
  const most = options.width ?? 770;
  let drawn = -1;
  const draw = () => {
    const room = box.clientWidth;
    const width = room > 160 ? Math.min(room - 2, most) : most;
    if (width !== drawn) {
      drawn = width;
      box.replaceChildren(createLayoutMap(layout, memory, { ...options, width }));
    }
  };
  draw();
  const resize = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(draw);
  resize?.observe(box);
  return { node: box, dispose: () => resize?.disconnect() };
}
