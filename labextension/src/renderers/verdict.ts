/** Renders a saved verdict (`Verdict._repr_mimebundle_`): badge, errors with hints, memory map, swimlane, player. */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { VerdictPayload } from '../views/types';
import { createVerdictView } from '../views/verdict';
import { RenderedTslab, View } from './base';

/** The MIME type of a tslab verdict, version 1 (`tslab/schemas/verdict.v1.json`). */
export const MIME_TYPE = 'application/vnd.tslab.verdict.v1+json';

export class RenderedVerdict extends RenderedTslab<VerdictPayload> {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options.mimeType, 'tslab-rendered-verdict');
  }

  protected draw(payload: VerdictPayload): View {
    if (typeof payload.status !== 'string' || !payload.memory) {
      throw new Error('not a tslab verdict');
    }
    return createVerdictView(payload);
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 40,
  createRenderer: options => new RenderedVerdict(options)
};

const extension: IRenderMime.IExtension = {
  id: 'tslab:verdict',
  description: 'Badge, memory map, swimlane and replay player for saved tslab verdicts.',
  rendererFactory,
  dataType: 'json'
};

export default extension;
