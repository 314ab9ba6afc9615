/** Renders a saved profile (`Timeline._repr_mimebundle_`) as the timeline of every profiled warp. */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { createTimeline } from '../views/timeline';
import type { TimelinePayload } from '../views/types';
import { RenderedTslab, View } from './base';

/** The MIME type of a tslab timeline, version 1 (`tslab/schemas/timeline.v1.json`). */
export const MIME_TYPE = 'application/vnd.tslab.timeline.v1+json';

export class RenderedTimeline extends RenderedTslab<TimelinePayload> {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options.mimeType, 'tslab-rendered-timeline');
  }

  protected draw(payload: TimelinePayload): View {
    if (!Array.isArray(payload.ranges) || !Array.isArray(payload.tasks)) {
      throw new Error('a timeline has no ranges');
    }
    return createTimeline(payload);
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 40,
  createRenderer: options => new RenderedTimeline(options)
};

const extension: IRenderMime.IExtension = {
  id: 'tslab:timeline',
  description: 'Timelines of profiled tslab kernels.',
  rendererFactory,
  dataType: 'json'
};

export default extension;
