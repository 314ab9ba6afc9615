/**
 * A tslab widget's output, live or saved. A Studio, editor, BenchPanel, LayoutChart, ReplayPlayer or SweepChart
 * output holds both the widget's
 * model id and a tslab payload or a plotly figure (`tslab/widgets/saved_output.py`). In each notebook this renderer comes ahead of
 * ipywidgets' own: it draws the live widget while its model exists in the kernel, and the saved payload (with a
 * line to run the cell) when it does not, as after reopening a notebook, instead of "model not found".
 */

import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';
import { MIME_TYPE as DESIGN, rendererFactory as designFactory } from './design';
import { MIME_TYPE as TRACE, rendererFactory as traceFactory } from './trace';
import { MIME_TYPE as VERDICT, rendererFactory as verdictFactory } from './verdict';

export const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
/** Ahead of ipywidgets' widget-view renderer, which each notebook ranks -10. */
export const RANK = -20;
/** How long a live widget may take to draw before the saved payload is shown meanwhile (no flash when live). */
const LIVE_WAIT_MS = 150;
/** A plotly figure (a SweepChart's saved output), drawn by plotly's own renderer where JupyterLab has it. */
export const PLOTLY = 'application/vnd.plotly.v1+json';
const SAVED: Record<string, IRenderMime.IRendererFactory> = { [DESIGN]: designFactory, [TRACE]: traceFactory, [VERDICT]: verdictFactory };

/** What a saved output draws of a widget whose live view has more: said in its note, so the two are not mistaken
 * for one another. */
const SAVED_SHOWS: Record<string, string> = {
  Studio: ': its design with its edits, and its verdict with the flow, memory map and schedule; not the editors, the GPU tab or the history',
  PipelineEditor: ': its design with its edits, and its verdict; not the fields',
  ScheduleEditor: ': its design with its edits, and its verdict; not the steps'
};

/** The model id in a widget-view payload, or null. */
function modelId(data: IRenderMime.IMimeModel['data']): string | null {
  const view = data[WIDGET_VIEW] as { model_id?: unknown } | undefined;
  return typeof view?.model_id === 'string' && view.model_id ? view.model_id : null;
}

/** The widget-view renderer has drawn a widget (not "Loading widget..." or "Error displaying widget"). */
export function drewWidget(node: HTMLElement): boolean {
  return node.firstElementChild !== null;
}

/** ipywidgets' renderer has given up on the model ("Error displaying widget: model not found"). */
export function gaveUp(node: HTMLElement): boolean {
  return !drewWidget(node) && (node.textContent ?? '').startsWith('Error displaying widget');
}

export class LiveOrSaved extends Panel implements IRenderMime.IRenderer {
  constructor(
    private readonly options: IRenderMime.IRendererOptions,
    private readonly liveRenderer: () => IRenderMime.IRenderer | null,
    private readonly savedFactory: IRenderMime.IRendererFactory = SAVED[options.mimeType]
  ) {
    super();
    this.addClass('tslab-live-or-saved');
  }

  /** What is on show: "live", "saved" or "" before the first render. */
  get showing(): string {
    return this._showing;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const id = model.trusted ? modelId(model.data) : null;
    if (id !== null && id === this._liveId) {
      return; // the live widget draws itself; an update only refreshed the payload the notebook saves
    }
    this._observer?.disconnect();
    this._live?.dispose();
    this._live = null;
    this._liveId = id;
    const live = id !== null ? this.liveRenderer() : null;
    if (live) {
      this._live = live as unknown as Widget;
      this._live.hide(); // until it has drawn: "Loading widget..." while the kernel's widgets load, or for good
      this.addWidget(this._live);
      // the kernel may hold the model, or restore it later (ipywidgets re-renders then): switch to it when drawn
      this._observer = new MutationObserver(() => {
        if (this._live && drewWidget(this._live.node)) {
          this._observer?.disconnect();
          this.show_('live');
        } else if (this._live && gaveUp(this._live.node)) {
          this._observer?.disconnect(); // the kernel has no such model: the saved payload is all there is
          this._live.dispose();
          this._live = null;
        }
      });
      this._observer.observe(this._live.node, { childList: true });
      const rendered = live.renderModel(model).catch(() => undefined);
      await Promise.race([rendered, new Promise(resolve => setTimeout(resolve, LIVE_WAIT_MS))]);
      if (this._live && drewWidget(this._live.node)) {
        this._observer.disconnect();
        this.show_('live');
        return;
      }
      if (this._live && gaveUp(this._live.node)) {
        this._observer.disconnect();
        this._live.dispose();
        this._live = null;
      }
    }
    await this.renderSaved(model);
  }

  private async renderSaved(model: IRenderMime.IMimeModel): Promise<void> {
    if (!this._saved) {
      const mimeType = this.options.mimeType;
      this._saved = this.savedFactory.createRenderer({ ...this.options, mimeType }) as unknown as Widget;
      this.insertWidget(0, this._saved);
    }
    await (this._saved as unknown as IRenderMime.IRenderer).renderModel(model);
    this.node.querySelector(':scope > .tslab-saved-note')?.remove();
    const payload = model.data[this.options.mimeType] as { widget?: string; tslab_trace?: number } | undefined;
    const widget = payload?.widget ?? (modelId(model.data) !== null ? 'widget' : null);
    if (widget) {
      const note = document.createElement('div');
      note.className = 'tslab-saved-note';
      note.textContent = `saved ${widget} output: what this cell showed (with the edits made in it)${SAVED_SHOWS[widget] ?? ''}. Run the cell to edit it.`;
      this.node.insertBefore(note, this._saved.node);
    }
    this.show_('saved');
  }

  private show_(which: 'live' | 'saved'): void {
    this._showing = which;
    this._live?.setHidden(which !== 'live');
    this._saved?.setHidden(which !== 'saved');
    this.node.querySelector<HTMLElement>(':scope > .tslab-saved-note')?.classList.toggle('lm-mod-hidden', which !== 'saved');
  }

  dispose(): void {
    this._observer?.disconnect();
    super.dispose();
  }

  private _live: Widget | null = null;
  private _liveId: string | null = null;
  private _saved: Widget | null = null;
  private _showing = '';
  private _observer: MutationObserver | null = null;
}

/** Put the live-or-saved renderer ahead of ipywidgets' in one notebook's registry. */
export function addLiveOrSaved(rendermime: IRenderMimeRegistry): void {
  const saved = { ...SAVED };
  const plotly = rendermime.getFactory(PLOTLY);
  if (plotly) {
    saved[PLOTLY] = plotly; // looked up before this renderer is ranked ahead of it
  }
  const live = () => (rendermime.mimeTypes.includes(WIDGET_VIEW) ? rendermime.createRenderer(WIDGET_VIEW) : null);
  rendermime.addFactory(
    {
      safe: true, // the widget-view renderer (not safe) is only used for trusted outputs
      mimeTypes: Object.keys(saved),
      createRenderer: options => new LiveOrSaved(options, live, saved[options.mimeType])
    },
    RANK
  );
}
