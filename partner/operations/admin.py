"""The operations dashboard's page in the admin (/admin/dashboard/, `partner.operations.dashboard`)."""

from django.contrib import admin

from partner.operations.dashboard import dashboard_install

dashboard_install(admin.site)
