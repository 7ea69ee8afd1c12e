// BullMQ's classes by their own entry point: the package's index also loads its PostgreSQL backend, which sunset
// never uses (~0.4 MB of source and ~1 MB of a resting sunset's heap). The same classes, the same types.
declare module 'bullmq/dist/cjs/classes/index.js' {
  export * from 'bullmq';
}
