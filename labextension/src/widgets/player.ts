/**
 * The live host of the replay player: the anywidget front end of `tslab.widgets.TraceView`. It draws with the
 * same `views/player` module as the trace mime renderer, so a live widget and a saved output look and behave
 * the same. The model holds the trace (`Trace.to_dict()`) and the step shown, synced both ways.
 */

import { PlayerView, createPlayer } from '../views/player';
import type { TracePayload } from '../views/types';

export interface TraceViewModel {
  get(name: 'trace'): TracePayload;
  get(name: 'index'): number;
  set(name: 'index', value: number): void;
  save_changes(): void;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

function render({ model, el }: { model: TraceViewModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-trace');
  let view: PlayerView | null = null;
  const step = (index: number) => {
    if (model.get('index') !== index) {
      model.set('index', index);
      model.save_changes();
    }
  };
  const draw = () => {
    view?.dispose();
    view = createPlayer(model.get('trace'), { start: model.get('index'), onStep: step });
    el.replaceChildren(view.node);
  };
  const follow = () => view?.show(model.get('index'));
  model.on('change:trace', draw);
  model.on('change:index', follow);
  draw();
  return () => {
    view?.dispose();
    model.off('change:trace', draw);
    model.off('change:index', follow);
  };
}

export default { render };
