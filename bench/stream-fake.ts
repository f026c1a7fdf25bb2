/**
 * The fake model server of bench/stream.ts in a process of its own (`--fake-apart`, phase (a)
 * only), forked by bench/stream-client.ts. By default the fake shares the clients' process, so
 * whatever the app writes to a client while the model works (the event stream's headers, say)
 * lands in the event loop that is answering the model call; deployed, the client and the
 * provider are different hosts. Apart, they are at least different processes.
 *
 * Protocol: child → parent `{type: 'fake', url, env}` once listening; it stops when the parent
 * disconnects. Argument: the number of chunks of every reply.
 */
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { benchReply } from './stream-reply.js';

const chunks = Number(process.argv[2] ?? '20');
const fake = await startFakeModelServer({
  defaultReply: () => benchReply(chunks),
});
// The fake records every request; a long run must not keep them all.
const trim = setInterval(() => fake.requests.splice(0, fake.requests.length), 1000);
process.once('disconnect', () => {
  clearInterval(trim);
  void fake.close().finally(() => process.exit(0));
});
process.send?.({ type: 'fake', url: fake.url, env: fake.env });
