"""The cluster's own reason why a pod cannot go on, from its status (pure; pod as a dict
in the API's JSON form, as ``kubectl get pod -o json`` shows it)."""

from __future__ import annotations

from typing import Any

# Container "waiting" reasons that will not resolve on their own within a cell.
FATAL_WAITING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                 "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
                 "CrashLoopBackOff", "ContainerCannotRun")


def _name(pod: dict[str, Any]) -> str:
    return (pod.get("metadata") or {}).get("name", "?")


def unschedulable(pod: dict[str, Any]) -> str | None:
    """The scheduler's message when it could not place the pod."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False" \
                and cond.get("reason") == "Unschedulable":
            return f"pod {_name(pod)} is unschedulable: {cond.get('message') or 'no reason given'}"
    return None


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return list(status.get("initContainerStatuses") or []) + \
        list(status.get("containerStatuses") or [])


def stuck(pod: dict[str, Any]) -> str | None:
    """A reason the pod will not start (scheduling, image, container config), or None."""
    message = unschedulable(pod)
    if message:
        return message
    for cs in _statuses(pod):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason in FATAL_WAITING:
            detail = (waiting.get("message") or "").strip().splitlines()
            return (f"pod {_name(pod)} container {cs.get('name')}: {reason}"
                    + (f": {detail[0][:300]}" if detail else "")
                    + (f" (image {cs.get('image')})" if "Image" in reason else ""))
    status = pod.get("status") or {}
    if status.get("phase") == "Failed" and not any(
            (cs.get("state") or {}).get("terminated") for cs in _statuses(pod)):
        return (f"pod {_name(pod)} failed: {status.get('reason') or 'Failed'}: "
                f"{(status.get('message') or '').strip()[:300]}").rstrip(": ")
    return None


def terminated(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """container name -> its terminated state (exitCode, reason, message)."""
    out = {}
    for cs in _statuses(pod):
        state = (cs.get("state") or {}).get("terminated")
        if state:
            out[cs.get("name")] = state
    return out


def ended(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def exit_line(pod: dict[str, Any], container: str) -> str | None:
    """'pod P container C: OOMKilled (exit 137)' for a container that did not exit 0."""
    state = terminated(pod).get(container)
    if not state:
        return None
    code = state.get("exitCode")
    reason = state.get("reason")
    if code == 0 and reason in (None, "Completed"):
        return None
    text = f"pod {_name(pod)} container {container}: "
    if reason == "OOMKilled":
        return text + f"OOMKilled (exit {code}: the container's memory limit was reached)"
    return text + f"exited {code}" + (f" ({reason})" if reason and reason != "Error" else "")


def pod_deadline(pod: dict[str, Any]) -> str | None:
    status = pod.get("status") or {}
    if status.get("reason") == "DeadlineExceeded":
        return f"pod {_name(pod)}: DeadlineExceeded ({status.get('message') or ''})".rstrip()
    return None
