"""Where documents are kept: the file system or an S3-compatible bucket."""

from .environment import VAR_DIR, env, setting_refused

# STORAGES (documents)
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#storages
# https://django-storages.readthedocs.io/en/latest/backends/amazon-S3.html
# Documents (generated reports, staff uploads) are files of Django's storage, never database rows:
# the file system under MEDIA_ROOT by default, or an S3-compatible bucket (django-storages) with
# DOCUMENT_STORAGE=s3. They are never served as public files: staff download them through the
# admin, lenders through views that check the order is theirs.
MEDIA_ROOT = env.str("MEDIA_ROOT", default=str(VAR_DIR / "media"))
DOCUMENT_STORAGE = env.str("DOCUMENT_STORAGE", default="filesystem")
if DOCUMENT_STORAGE not in ("filesystem", "s3"):
    DOCUMENT_STORAGE = setting_refused("DOCUMENT_STORAGE", "must be filesystem (the default) or s3", "filesystem")
if DOCUMENT_STORAGE == "filesystem":
    _documents_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
else:
    _documents_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env.str("DOCUMENTS_S3_BUCKET", default=""),  # required: partner.E008
            "endpoint_url": env.str("DOCUMENTS_S3_ENDPOINT_URL", default="") or None,  # MinIO, R2, ...
            "region_name": env.str("DOCUMENTS_S3_REGION", default="") or None,
            "access_key": env.str("DOCUMENTS_S3_ACCESS_KEY_ID", default="") or None,  # else the instance's role
            "secret_key": env.str("DOCUMENTS_S3_SECRET_ACCESS_KEY", default="") or None,
            "location": env.str("DOCUMENTS_S3_PREFIX", default=""),
            "default_acl": "private",
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
# Files on one machine's disk are seen by the processes that mount it only: with
# DOCUMENT_STORAGE=filesystem a deployment says that every web and worker process reads the same
# MEDIA_ROOT (one machine without containers, or compose's shared `documents` volume), else the
# servers refuse to start (partner.E015).
DOCUMENTS_SINGLE_HOST = env.bool("DOCUMENTS_SINGLE_HOST", default=False)
# Kubernetes sets KUBERNETES_SERVICE_HOST in every container: there each pod has a disk of its own,
# so documents must be in S3 whatever DOCUMENTS_SINGLE_HOST says (partner.E015).
ON_KUBERNETES = bool(env.str("KUBERNETES_SERVICE_HOST", default=""))
STORAGES = {
    "default": _documents_storage,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
