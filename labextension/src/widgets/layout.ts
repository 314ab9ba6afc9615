/**
 * The live host of the memory map: the anywidget front end of `tslab.widgets.layout_chart.LayoutView`, drawn
 * by the same `views/layout` module as a saved verdict's output. The model holds TS's layout table as rows
 * (`allocations`), the memory figures, a heading, the map's width (ipywidgets keeps `layout` and `width`) and whether
 * it prints its own summary line (a LayoutChart prints one for both maps).
 */

import { createLayoutMap } from '../views/layout';
import type { Allocation, Memory } from '../views/types';

export interface LayoutViewModel {
  get(name: 'allocations'): Allocation[];
  get(name: 'memory'): Memory;
  get(name: 'heading'): string;
  get(name: 'map_width'): number;
  get(name: 'summary'): boolean;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

const TRAITS = ['allocations', 'memory', 'heading', 'map_width', 'summary'];

function render({ model, el }: { model: LayoutViewModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-layout');
  let drawnAt = 0;
  const draw = () => {
    const memory = model.get('memory');
    // the width the output gives once in the page (at most the model's), else the model's own
    const room = el.clientWidth;
    const width = room > 160 ? Math.min(room - 2, model.get('map_width')) : model.get('map_width');
    drawnAt = room;
    el.replaceChildren(memory && 'smem_used' in memory ? createLayoutMap(model.get('allocations'), memory, { title: model.get('heading'), width, summary: model.get('summary') }) : '');
  };
  TRAITS.forEach(name => model.on(`change:${name}`, draw));
  draw();
  const resize = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => el.clientWidth !== drawnAt && draw());
  resize?.observe(el);
  return () => {
    resize?.disconnect();
    TRAITS.forEach(name => model.off(`change:${name}`, draw));
  };
}

export default { render };
