"""User input, checked in one place before any work is done.

What the CLI's options and the Python API's keyword arguments say, turned into validated
plans and specifications: :func:`run_plan`, :func:`audit_plans`, :func:`one_pragmas`,
:class:`Gates`, :class:`Outputs`, and single values. Every check raises
:class:`~fsyncbench.errors.FsyncbenchError` with one line naming the CLI option, so a bad
value reads the same through ``fsyncbench`` and through :mod:`fsyncbench.api`. Nothing here
measures, prints or writes (the output checks create an unnamed temporary file that
vanishes again, to learn that a directory really is writable).

One module per job, each re-exported here (``options.X`` is the way to reach one):
``values`` (single values and the API arguments' types), ``plans`` (``run``, its writers,
``audit``, one pragma combination), ``gates`` (:class:`Gates`), ``outputs``
(:class:`Outputs`: the files a command writes), ``workflows`` (``powerloss`` and
``powercut``).
"""

from fsyncbench.options.gates import Gates
from fsyncbench.options.outputs import Outputs, same_file, writable_file
from fsyncbench.options.plans import (
    MAX_BUSY_TIMEOUT_MS,
    MAX_STEPS_PER_COMMIT,
    audit_plans,
    audit_types,
    one_pragmas,
    run_plan,
    writers_plan,
)
from fsyncbench.options.values import (
    COMPARE_FORMATS,
    MODEL_CALL_MS_MAX,
    MODEL_CALL_MS_MIN,
    REPORT_FORMATS,
    TABLE_FORMATS,
    VERIFY_FORMATS,
    assumed,
    check_callback,
    check_instance,
    check_integer,
    check_list,
    check_number,
    check_path,
    check_text,
    choice,
    fullfsync_value,
    given,
    int_list,
    model_call_ms,
    percent,
    target_dir,
    vs_names,
)
from fsyncbench.options.workflows import (
    address,
    cycle_plan,
    powercut_secret,
    powerloss_models,
    powerloss_plan,
)

__all__ = [
    # values
    "COMPARE_FORMATS",
    "MODEL_CALL_MS_MAX",
    "MODEL_CALL_MS_MIN",
    "REPORT_FORMATS",
    "TABLE_FORMATS",
    "VERIFY_FORMATS",
    "assumed",
    "check_callback",
    "check_instance",
    "check_integer",
    "check_list",
    "check_number",
    "check_path",
    "check_text",
    "choice",
    "fullfsync_value",
    "given",
    "int_list",
    "model_call_ms",
    "percent",
    "target_dir",
    "vs_names",
    # plans
    "MAX_BUSY_TIMEOUT_MS",
    "MAX_STEPS_PER_COMMIT",
    "audit_plans",
    "audit_types",
    "one_pragmas",
    "run_plan",
    "writers_plan",
    # gates and outputs
    "Gates",
    "Outputs",
    "same_file",
    "writable_file",
    # workflows
    "address",
    "cycle_plan",
    "powercut_secret",
    "powerloss_models",
    "powerloss_plan",
]
