/** Renders a saved checker trace (`Trace._repr_mimebundle_`) as the interactive replay player. */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { createPlayer } from '../views/player';
import type { TracePayload } from '../views/types';
import { RenderedTslab, View } from './base';

/** The MIME type of a tslab trace, version 1 (`tslab/schemas/trace.v1.json`). */
export const MIME_TYPE = 'application/vnd.tslab.trace.v1+json';

export class RenderedTrace extends RenderedTslab<TracePayload> {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options.mimeType, 'tslab-rendered-trace');
  }

  protected draw(payload: TracePayload): View {
    if (!Array.isArray(payload.steps) || !payload.steps.length) {
      throw new Error('a trace has no steps');
    }
    return createPlayer(payload);
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 40,
  createRenderer: options => new RenderedTrace(options)
};

const extension: IRenderMime.IExtension = {
  id: 'tslab:trace',
  description: 'Replay player for saved tslab traces.',
  rendererFactory,
  dataType: 'json'
};

export default extension;
