/** The mime extension: tslab's saved verdicts, traces, designs and timelines drawn in JupyterLab without a kernel. */

import design from './renderers/design';
import timeline from './renderers/timeline';
import trace from './renderers/trace';
import verdict from './renderers/verdict';

export default [verdict, trace, design, timeline];
