"""One Python worker process of test_version_cache_on_s3.py: it writes or reads RocksDB key
groups of a STREAMING store whose checkpoint is on the S3 server, with the executor scratch
(``SPARK_LOCAL_DIRS``) of the host it stands for.

``python keygroup_child.py '<json>'`` with ``checkpoint``, ``endpoint`` and either ``write``
(micro-batches: in batch ``b`` every key ``k<i>`` of the key groups gets the value
``100 * b + i``) or ``read`` (key group -> pointer, hex); ``version_cache`` (default true).
Prints one JSON line: the pointers written, or the values read, and the bytes the store read
from the checkpoint's storage; or the error a read raised.
"""

from __future__ import annotations

import json
import sys

from pyspark_datastream.state_store.backends.rocksdb.keygroup_store import RocksDBKeyGroupStore
from pyspark_datastream.state_store.descriptors import ValueStateDescriptor
from pyspark_datastream.state_store.exceptions import StateBackendError
from pyspark_datastream.state_store.keygroups import assign_key_group
from pyspark_datastream.state_store.serializers import GenericKeySerializer
from pyspark_datastream.state_store.storage import Storage, StorageOptions
from pyspark_datastream.state_store.types import Types

KS = GenericKeySerializer.INSTANCE
MAX_PARALLELISM = 8
KEYS = [f"k{i}" for i in range(200)]
COUNT = ValueStateDescriptor("count", Types.LONG())


def key_group(key: str) -> int:
    return assign_key_group(KS.serialize(key), MAX_PARALLELISM)


def main(args: dict) -> dict:
    storage = Storage(StorageOptions(s3_endpoint=args["endpoint"], s3_access_key="testing-access",
                                     s3_secret_key="testing-secret", s3_region="us-east-1"))
    store = RocksDBKeyGroupStore(args["checkpoint"], KS, MAX_PARALLELISM, storage=storage,
                                 version_cache=args.get("version_cache", True))
    if "write" in args:
        pointers: dict[int, bytes] = {}
        for batch in range(args["write"]):
            for group in range(MAX_PARALLELISM):
                backend = store.acquire(group, pointers.get(group))
                state = backend.get_state(COUNT)
                for i, key in enumerate(KEYS):
                    if key_group(key) == group:
                        backend.set_current_key(key)
                        state.update(100 * batch + i)
                pointers[group] = store.commit(group, backend)
        return {"pointers": {g: p.hex() for g, p in pointers.items()},
                "storage_bytes_read": store.storage_bytes_read}
    values: dict[str, int] = {}
    try:
        for group, pointer in args["read"].items():
            backend = store.acquire(int(group), bytes.fromhex(pointer))
            state = backend.get_state(COUNT)
            for key in backend.keys("count"):
                backend.set_current_key(key)
                values[key] = state.value()
    except StateBackendError as exc:
        return {"error": str(exc), "storage_bytes_read": store.storage_bytes_read}
    return {"values": values, "storage_bytes_read": store.storage_bytes_read}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
