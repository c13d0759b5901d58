/** Function tools in the Responses API's form, for the scripted model server's unit tests. */

/** `lookup(city)`, strict, as OpenAI's strict mode takes it. */
export const lookupTool = {
  type: 'function' as const,
  name: 'lookup',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};
