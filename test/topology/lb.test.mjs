/** nginx in front of three instances (issue 37): the spread, and a rolling restart under load. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { callTool, clientAddress, closeAgents, request, state, statuses, upstreams } from './support.mjs';

describe('nginx → three instances', () => {
  after(() => closeAgents());

  it('spreads requests round robin over the three, each ready with the cluster shared', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => callTool(state.token, 'list_forms', {}, { from: clientAddress() })),
    );
    assert.deepEqual(statuses(answers), { 200: 12 });
    assert.equal(upstreams(answers).size, 3);
    for (const instance of state.instances) {
      const ready = await request('/readyz', { port: instance.port });
      assert.equal(ready.status, 200, ready.text);
      assert.equal(ready.json.rateLimits, 'shared', ready.text);
    }
  });
});
