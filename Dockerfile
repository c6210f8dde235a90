# The project image: the worker, the commerce MCP server, the reviewer console, the codec server and
# starter.py, one image, another command each (docker-compose.yml). No secret and no key is part of it:
# the token secret comes from the environment, the keys from volumes that the `keys` one-shot fills at
# start.
FROM python:3.11.13-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 support \
    && useradd --system --uid 10001 --gid support --home-dir /srv/support --no-create-home \
        --shell /usr/sbin/nologin support

WORKDIR /app
COPY . /app
RUN pip install . \
    && rm -rf /app/build /app/*.egg-info

# Mount points of the named volumes, created here so that a new volume takes this owner and mode
# (Docker copies the mount point's owner and mode into an empty named volume; a directory the image
# lacks would make a root-owned volume that the support user cannot write): keys/ (every demo private
# key), commerce-key/ (the receipt key only), public/ (the public key set), state/ (the workers' case
# records and preferences), console/ (the reviewer console's sessions and enrolment records).
RUN mkdir -p /srv/support/keys /srv/support/commerce-key /srv/support/public /srv/support/state \
        /srv/support/console \
    && chown -R support:support /srv/support \
    && chmod 0700 /srv/support/keys /srv/support/commerce-key /srv/support/state /srv/support/console \
    && chmod 0755 /srv/support/public

# The image's build label: the worker's build id is `<package version>+build.<label>`
# (case_client/deployment.py), so two images of one package version run as two Worker Deployment
# versions. docker-compose.yml passes SUPPORT_IMAGE_BUILD (a CI build number, say); `local` when unset.
# Declared last, so a new label rebuilds only this layer.
ARG SUPPORT_IMAGE_BUILD=local
ENV SUPPORT_IMAGE_BUILD=${SUPPORT_IMAGE_BUILD}

USER support
EXPOSE 8765
CMD ["python", "worker.py"]
