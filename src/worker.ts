import { loadConfig } from './config/env.js';
import { resolveSecretKey } from './config/secret-key.js';
import { createDeps } from './deps.js';
import { createLogger } from './platform/logger.js';
import { onShutdownSignal } from './platform/shutdown.js';

/** A job worker only (distributed profile): `npm run worker`, as many processes as needed. */
const config = resolveSecretKey(loadConfig());
const log = createLogger(config.LOG_LEVEL);
const deps = await createDeps(config, log);
log.info('worker started');

onShutdownSignal(log, config.SHUTDOWN_GRACE_SECONDS, () => deps.close());
