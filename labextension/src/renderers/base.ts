/**
 * What every tslab mime renderer shares: read the payload (a notebook keeps JSON, a design file is text),
 * redraw only when it changed, release the previous view, and degrade to the plain-text fallback, never throw.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

export interface View {
  node: HTMLElement;
  dispose(): void;
}

export abstract class RenderedTslab<T> extends Widget implements IRenderMime.IRenderer {
  protected constructor(protected readonly mimeType: string, className: string) {
    super();
    this.addClass('tslab-rendered');
    this.addClass(className);
  }

  /** Build the view of one payload (throws on a payload it cannot draw). */
  protected abstract draw(payload: T): View;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const raw = model.data[this.mimeType];
    const key = typeof raw === 'string' ? raw : JSON.stringify(raw);
    if (key === this._key) {
      return;
    }
    this._key = key;
    this._view?.dispose();
    this._view = null;
    try {
      const payload = (typeof raw === 'string' ? JSON.parse(raw) : raw) as T;
      this._view = this.draw(payload);
      this.node.replaceChildren(this._view.node);
    } catch (error) {
      const text = model.data['text/plain'];
      const pre = document.createElement('pre');
      pre.className = 'tslab-fallback';
      pre.textContent = typeof text === 'string' ? text : `tslab could not draw this ${this.mimeType} output: ${error}`;
      this.node.replaceChildren(pre);
    }
  }

  dispose(): void {
    this._view?.dispose();
    this._view = null;
    super.dispose();
  }

  private _key: string | null = null;
  private _view: View | null = null;
}
