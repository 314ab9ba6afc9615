/** The launcher's tslab icons: a swimlane (a new design notebook) and an open book (the tutorials). */

import { LabIcon } from '@jupyterlab/ui-components';

export const studioIcon = new LabIcon({
  name: 'tslab:studio',
  svgstr: '<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161"><rect x="2" y="4" width="5" height="4" rx="1"/><rect x="8" y="4" width="8" height="4" rx="1"/><rect x="5" y="10" width="9" height="4" rx="1"/><rect x="15" y="10" width="7" height="4" rx="1"/><rect x="2" y="16" width="7" height="4" rx="1"/><rect x="10" y="16" width="6" height="4" rx="1"/></g><rect class="jp-icon-accent2" fill="#0969da" x="17" y="4" width="5" height="4" rx="1"/></svg>'
});

export const tutorialsIcon = new LabIcon({
  name: 'tslab:tutorials',
  svgstr: '<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24"><path class="jp-icon3" fill="#616161" d="M3 5.5C3 4.7 3.7 4 4.5 4H10c1.1 0 2 .9 2 2v14c0-1.1-.9-2-2-2H3V5.5zm18 0c0-.8-.7-1.5-1.5-1.5H14c-1.1 0-2 .9-2 2v14c0-1.1.9-2 2-2h7V5.5z"/><rect class="jp-icon-accent2" fill="#0969da" x="14" y="7" width="5" height="2" rx="1"/><rect class="jp-icon-accent2" fill="#0969da" x="14" y="11" width="5" height="2" rx="1"/></svg>'
});
