"""State layer: serializers, state primitives, keyed backends, savepoint format. No Spark."""
