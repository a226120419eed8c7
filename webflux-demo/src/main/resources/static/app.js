// The demo page: streams POST /api/chat, drives /api/faults and /api/policy, and polls /api/guard
// for the live panel. ES modules, no build step: this one wires the others and starts the polls.

import { barHeight, chartScale } from './chart.js';
import { initChat } from './chat.js';
import { initFaults, rereadFaults } from './faults.js';
import { loadPoints, loadScaleTop } from './load-panel.js';
import { breakerWaitText, refreshGuard, showLastSource } from './panel.js';
import { initPolicy, readPolicy } from './policy.js';

initChat({ showSource: showLastSource, afterAnswer: refreshGuard });
initFaults();
initPolicy();

// the page's pure functions, for tests (and the curious, from the console)
window.AiGuardDemo = Object.freeze({ breakerWaitText, chartScale, barHeight, loadScaleTop, loadPoints });

rereadFaults();
refreshGuard();
readPolicy(true);
setInterval(() => { refreshGuard(); rereadFaults(); }, 1000);
setInterval(() => readPolicy(false), 3000);
