/**
 * Renders a tslab design: as a notebook output (`Design._repr_mimebundle_`) and as the viewer of design files
 * (`*.tslab.json`, written by `Design.save`), with the verdict saved in the file.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { createDesignView } from '../views/design';
import type { DesignPayload } from '../views/types';
import { RenderedTslab, View } from './base';

/** The MIME type of a tslab design, version 1 (`tslab/schemas/design.v1.json`). */
export const MIME_TYPE = 'application/vnd.tslab.design.v1+json';
export const FILE_TYPE = 'tslab-design';

export class RenderedDesign extends RenderedTslab<DesignPayload> {
  constructor(options: IRenderMime.IRendererOptions) {
    super(options.mimeType, 'tslab-rendered-design');
  }

  protected draw(payload: DesignPayload): View {
    if (typeof payload.kernel !== 'string') {
      throw new Error('not a tslab design (no kernel)');
    }
    return createDesignView(payload);
  }
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 40,
  createRenderer: options => new RenderedDesign(options)
};

const extension: IRenderMime.IExtension = {
  id: 'tslab:design',
  description: 'Viewer of tslab designs and design files.',
  rendererFactory,
  dataType: 'json',
  fileTypes: [
    { name: FILE_TYPE, displayName: 'tslab design', mimeTypes: [MIME_TYPE], extensions: ['.tslab.json'], fileFormat: 'text' }
  ],
  documentWidgetFactoryOptions: {
    name: 'tslab design',
    primaryFileType: FILE_TYPE,
    fileTypes: [FILE_TYPE],
    defaultFor: [FILE_TYPE]
  }
};

export default extension;
