import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleWorkflowsApart, workflowBundleFingerprint } from '../../src/worker/workflow-bundle';
import { encryptingDataConverter } from '../../src/codec';

// A worker start reuses the workflow bundle of an earlier start when nothing it is made of changed.

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bundle-reuse-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the workflow bundle of an earlier start', () => {
  it('has a fingerprint that changes with what goes into the bundle', () => {
    const plain = workflowBundleFingerprint();
    expect(workflowBundleFingerprint()).toBe(plain);
    const encrypted = encryptingDataConverter([{ id: 'k1', key: new Uint8Array(32).fill(7) }]);
    expect(workflowBundleFingerprint({ failureConverterPath: encrypted.failureConverterPath })).not.toBe(plain);
    expect(workflowBundleFingerprint({ workflowInterceptorModules: [__filename] })).not.toBe(plain);
  });

  it('is made when none matches, and reused (not made again) when its fingerprint matches', async () => {
    const made = await bundleWorkflowsApart(dir);
    expect(made.reused).toBe(false);
    const code = fs.readFileSync(made.codePath, 'utf8');
    expect(code).toContain('agentConversation');
    const madeAt = fs.statSync(made.codePath).mtimeMs;

    const again = await bundleWorkflowsApart(dir);
    expect(again).toEqual({ codePath: made.codePath, reused: true });
    expect(fs.statSync(again.codePath).mtimeMs).toBe(madeAt);

    // A fingerprint of other sources (an edited file) makes it again.
    fs.writeFileSync(path.join(dir, 'workflow-bundle.fingerprint'), 'other sources');
    const remade = await bundleWorkflowsApart(dir);
    expect(remade.reused).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'workflow-bundle.fingerprint'), 'utf8')).toBe(workflowBundleFingerprint());
  }, 120_000);
});
