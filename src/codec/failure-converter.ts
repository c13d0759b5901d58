/**
 * The failure converter used with encrypted payloads: a failure's message and
 * stack travel inside its encoded attributes (a payload, so encrypted too)
 * instead of in plain fields of the history. Loaded by path
 * (`dataConverter.failureConverterPath`) in the worker, its workflow bundle
 * and clients.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
