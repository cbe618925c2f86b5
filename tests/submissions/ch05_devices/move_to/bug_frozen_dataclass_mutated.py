"""BUG: dataclass instance modified in place and returned (not a new instance)"""
EXPECT_FAIL = {"keeps_container_types": "input's own object", "input_not_modified": "was replaced"}

import dataclasses
from collections import defaultdict
import torch


def move_to(obj, device, *, non_blocking=False):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)  #TENSOR
    if isinstance(obj, dict):  #DICT
        if isinstance(obj, defaultdict):
            out = type(obj)(obj.default_factory)  #DD
        else:
            out = type(obj)()  #OD
        for k, v in obj.items():  #ITEMS
            out[k] = move_to(v, device, non_blocking=non_blocking)  #SETITEM
        return out
    if type(obj) is list:  #LIST
        return [move_to(v, device, non_blocking=non_blocking) for v in obj]
    if type(obj) is tuple:  #TUPLE
        return tuple(move_to(v, device, non_blocking=non_blocking) for v in obj)
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):  #NT
        return type(obj)(*(move_to(v, device, non_blocking=non_blocking) for v in obj))  #NTBUILD
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):  #DC
        fs = dataclasses.fields(obj)
        if all(f.init for f in fs):  #INIT
            for f in fs:
                object.__setattr__(obj, f.name, move_to(getattr(obj, f.name), device, non_blocking=non_blocking))
            return obj  #REPLACE
    return obj
