// The parts `sunset up` runs (--role), in a module of their own: the CLI checks them before it loads the pipeline.
export type Role = 'producers' | 'workers' | 'web';
export const ROLES: Role[] = ['producers', 'workers', 'web'];
