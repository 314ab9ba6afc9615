/** The mime extension: tslab's saved verdicts, traces and designs drawn in JupyterLab without a kernel. */

import design from './renderers/design';
import trace from './renderers/trace';
import verdict from './renderers/verdict';

export default [verdict, trace, design];
