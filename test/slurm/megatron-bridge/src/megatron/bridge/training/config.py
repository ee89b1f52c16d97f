"""Stand-in for megatron.bridge.training.config: a ConfigContainer that PyYAML loads.

from_yaml reads the file with yaml.safe_load, which is how Megatron-Bridge's own loader reads
it. QR_STANDIN_DROP=KEY.PATH makes to_dict() lack that key, as the real from_yaml drops a key
its classes lack, so a test can see the launch script's loader stop the job.
"""
import os

import yaml


class ConfigContainer:
    def __init__(self, path, data):
        self.path, self.data = path, data

    @classmethod
    def from_yaml(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls(path, yaml.safe_load(f))

    def to_dict(self):
        drop = os.environ.get("QR_STANDIN_DROP")
        if not drop:
            return self.data
        *parents, last = drop.split(".")
        data = yaml.safe_load(yaml.safe_dump(self.data))
        node = data
        for key in parents:
            node = node[key]
        del node[last]
        return data
