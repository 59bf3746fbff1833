# The grading machine of the Transformer course as a container: nbgrader, the course's package and the sandbox's
# tools (util-linux: unshare, setpriv). Build it from the repository's top folder:
#
#     docker build -f course_tools/classroom/grader.Dockerfile -t tc-grader .
#
# and grade a course folder built with `python -m transformer_course classroom course/` (here ./course):
#
#     docker run --rm --cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#         --network none -v "$PWD/course:/course" -w /course tc-grader nbgrader autograde nb01
#
# Podman, rootless (the sandbox then uses a user namespace: `--user --map-root-user`):
#
#     podman run --rm --security-opt seccomp=unconfined --network none -v "$PWD/course:/course:Z" -w /course \
#         tc-grader nbgrader autograde nb01
#
# SYS_ADMIN (or an unconfined seccomp profile that allows user namespaces) is what lets `unshare` make the mount,
# pid and network namespaces inside the container; without it the sandbox falls back to a plain child process
# (docs/teaching.md, "Grading at a process boundary", says what still holds then). The container adds its own
# boundary around all of it: the grading sees only /course and the image, and `--network none` cuts the network
# of nbgrader itself too.
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends util-linux git \
    && rm -rf /var/lib/apt/lists/*

# the CPU build of torch first (the course's grading runs in fast mode on CPU)
RUN pip install --no-cache-dir torch --index-url https://download.pytorch.org/whl/cpu

WORKDIR /opt/transformer_course
COPY pyproject.toml README.md ./
COPY transformer_course ./transformer_course
COPY course_tools ./course_tools
RUN pip install --no-cache-dir ".[classroom]" \
    && python -c "import course_tools.classroom.autograde, transformer_course"

# the reference solutions stay out of the image: the course folder's source/ holds what grading needs
ENV TC_FAST=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /course
