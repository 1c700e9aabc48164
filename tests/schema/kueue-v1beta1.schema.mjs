// kueue-v1beta1.schema.mjs - JSON schemas (draft-07, for ajv) of the Kueue
// kueue.x-k8s.io/v1beta1 objects kctl may render.  npm has no Kueue models
// package, so these are written by hand from the field list of Kueue's v1beta1
// CRDs (ResourceFlavor, ClusterQueue, LocalQueue, WorkloadPriorityClass).
// Unlike the kubernetes-models schemas they refuse unknown fields, as the
// apiserver does for structural CRD schemas (pruning, or Strict validation).

const quantity = {
  anyOf: [
    { type: "integer" },
    { type: "number" },
    { type: "string", pattern: "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$" },
  ],
};
const name = { type: "string", minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" };
const labelSelector = {
  type: "object",
  additionalProperties: false,
  properties: {
    matchLabels: { type: "object", additionalProperties: { type: "string" } },
    matchExpressions: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["key", "operator"],
        properties: {
          key: { type: "string" },
          operator: { enum: ["In", "NotIn", "Exists", "DoesNotExist"] },
          values: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
};
const metadata = {
  type: "object",
  required: ["name"],
  properties: {
    name,
    namespace: { type: "string" },
    labels: { type: "object", additionalProperties: { type: "string" } },
    annotations: { type: "object", additionalProperties: { type: "string" } },
  },
};
const stopPolicy = { enum: ["None", "Hold", "HoldAndDrain"] };
const taint = {
  type: "object",
  additionalProperties: false,
  required: ["key", "effect"],
  properties: {
    key: { type: "string" },
    value: { type: "string" },
    effect: { enum: ["NoSchedule", "PreferNoSchedule", "NoExecute"] },
    timeAdded: { type: "string" },
  },
};
const toleration = {
  type: "object",
  additionalProperties: false,
  properties: {
    key: { type: "string" },
    operator: { enum: ["Exists", "Equal"] },
    value: { type: "string" },
    effect: { enum: ["", "NoSchedule", "PreferNoSchedule", "NoExecute"] },
    tolerationSeconds: { type: "integer" },
  },
};
function object(kind, spec, namespaced, specRequired = true) {
  return {
    type: "object",
    additionalProperties: false,
    required: ["apiVersion", "kind", "metadata"].concat(specRequired ? ["spec"] : []),
    properties: {
      apiVersion: { const: "kueue.x-k8s.io/v1beta1" },
      kind: { const: kind },
      metadata: namespaced ? metadata : { ...metadata, not: { required: ["namespace"] } },
      spec,
      status: { type: "object" },
    },
  };
}

export const schemas = {
  ResourceFlavor: object("ResourceFlavor", {
    type: "object",
    additionalProperties: false,
    properties: {
      nodeLabels: { type: "object", maxProperties: 8, additionalProperties: { type: "string", maxLength: 63 } },
      nodeTaints: { type: "array", maxItems: 8, items: taint },
      tolerations: { type: "array", maxItems: 8, items: toleration },
      topologyName: { type: "string" },
    },
  }, false, false),
  ClusterQueue: object("ClusterQueue", {
    type: "object",
    additionalProperties: false,
    properties: {
      resourceGroups: {
        type: "array",
        maxItems: 16,
        items: {
          type: "object",
          additionalProperties: false,
          required: ["coveredResources", "flavors"],
          properties: {
            coveredResources: { type: "array", minItems: 1, maxItems: 16, items: { type: "string" } },
            flavors: {
              type: "array",
              minItems: 1,
              maxItems: 16,
              items: {
                type: "object",
                additionalProperties: false,
                required: ["name", "resources"],
                properties: {
                  name,
                  resources: {
                    type: "array",
                    minItems: 1,
                    maxItems: 16,
                    items: {
                      type: "object",
                      additionalProperties: false,
                      required: ["name", "nominalQuota"],
                      properties: {
                        name: { type: "string" },
                        nominalQuota: quantity,
                        borrowingLimit: quantity,
                        lendingLimit: quantity,
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
      cohort: { type: "string", maxLength: 253 },
      queueingStrategy: { enum: ["StrictFIFO", "BestEffortFIFO"] },
      namespaceSelector: labelSelector,
      flavorFungibility: {
        type: "object",
        additionalProperties: false,
        properties: {
          whenCanBorrow: { enum: ["Borrow", "TryNextFlavor"] },
          whenCanPreempt: { enum: ["Preempt", "TryNextFlavor"] },
        },
      },
      preemption: {
        type: "object",
        additionalProperties: false,
        properties: {
          reclaimWithinCohort: { enum: ["Never", "LowerPriority", "Any"] },
          borrowWithinCohort: {
            type: "object",
            additionalProperties: false,
            properties: {
              policy: { enum: ["Never", "LowerPriority"] },
              maxPriorityThreshold: { type: "integer" },
            },
          },
          withinClusterQueue: { enum: ["Never", "LowerPriority", "LowerOrNewerEqualPriority"] },
        },
      },
      admissionChecks: { type: "array", items: { type: "string" } },
      admissionChecksStrategy: { type: "object" },
      stopPolicy,
      fairSharing: {
        type: "object",
        additionalProperties: false,
        properties: { weight: quantity },
      },
    },
  }, false),
  LocalQueue: object("LocalQueue", {
    type: "object",
    additionalProperties: false,
    required: ["clusterQueue"],
    properties: {
      clusterQueue: { ...name, maxLength: 253 },
      stopPolicy,
      fairSharing: { type: "object", additionalProperties: false, properties: { weight: quantity } },
    },
  }, true),
  WorkloadPriorityClass: {
    type: "object",
    additionalProperties: false,
    required: ["apiVersion", "kind", "metadata", "value"],
    properties: {
      apiVersion: { const: "kueue.x-k8s.io/v1beta1" },
      kind: { const: "WorkloadPriorityClass" },
      metadata: { ...metadata, not: { required: ["namespace"] } },
      value: { type: "integer", minimum: -2147483648, maximum: 1000000000 },
      description: { type: "string" },
    },
  },
};
