// The kinds of chain, one line each, under the name their chains carry (`ref.kind`). A new kind is a file beside
// these (types.ts says what it provides) and a line here; nothing else in the pipeline asks which kind it holds.
export { taskKind as task } from './task.js';
export { jobKind as job } from './job.js';
export { expireKind as expire } from './expire.js';
